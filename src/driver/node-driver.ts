import { IoredisDriver } from './ioredis.ts';
import { NodeRedisDriver } from './node-redis.ts';
import type { Driver, NodeDriverOptions } from './types.ts';

/**
 * A plain one-node driver on the client library `kind`: the one place that picks the class, for
 * one Redis, each node of a quorum, Cluster and Sentinel, and the CLI's connections.
 */
export function createNodeDriver(kind: 'node-redis' | 'ioredis', options: NodeDriverOptions): Driver {
  return kind === 'ioredis' ? new IoredisDriver(options) : new NodeRedisDriver(options);
}
