import { GlideDriver } from './glide.ts';
import { IoredisDriver } from './ioredis.ts';
import { NodeRedisDriver } from './node-redis.ts';
import type { Driver, DriverKind, NodeDriverOptions } from './types.ts';

/**
 * A plain one-node driver on the client library `kind`: the one place that picks the class, for
 * one Redis, each node of a quorum, Cluster and Sentinel, and the CLI's connections.
 */
export function createNodeDriver(kind: DriverKind, options: NodeDriverOptions): Driver {
  if (kind === 'node-redis') return new NodeRedisDriver(options);
  if (kind === 'glide') return new GlideDriver(options);
  // iovalkey is ioredis's API: the same driver, its own connections made with that package.
  return new IoredisDriver(options, kind);
}
