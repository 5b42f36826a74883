import type { ValidConnectOptions } from '../connect-options.ts';
import { ClusterDriver } from './cluster.ts';
import { IoredisDriver } from './ioredis.ts';
import { NodeRedisDriver } from './node-redis.ts';
import { SentinelDriver } from './sentinel.ts';
import { ioredisSubscribe, nodeRedisSubscribe } from './subscriber.ts';
import type { Driver, NodeDriverFactory } from './types.ts';

/** The driver for `cluster` or `sentinel`, undefined for the other topologies. */
export function topologyDriver(valid: ValidConnectOptions): Driver | undefined {
  const tracking = valid.notifications === 'tracking';
  const factory: NodeDriverFactory = (url, track) =>
    valid.driver === 'ioredis'
      ? new IoredisDriver({ url, tracking: track })
      : new NodeRedisDriver({ url, tracking: track });
  const durability = valid.durability;
  if (valid.cluster !== undefined) {
    return new ClusterDriver({ rootNodes: valid.cluster.rootNodes, tracking, factory, durability });
  }
  if (valid.sentinel !== undefined) {
    const { name, sentinels } = valid.sentinel;
    const subscribe = valid.driver === 'ioredis' ? ioredisSubscribe : nodeRedisSubscribe;
    return new SentinelDriver({ name, sentinels, tracking, factory, subscribe, durability });
  }
  return undefined;
}

/** Where connect() tried to reach, for ConnectError messages; undefined for the other topologies. */
export function topologyTarget(valid: ValidConnectOptions): string | undefined {
  if (valid.cluster !== undefined) return `the cluster (root nodes ${valid.cluster.rootNodes.join(', ')})`;
  if (valid.sentinel !== undefined) {
    return `the master "${valid.sentinel.name}" of the sentinels ${valid.sentinel.sentinels.join(', ')}`;
  }
  return undefined;
}
