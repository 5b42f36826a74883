import { redact } from '../base/redact.ts';
import { defaultCanaryKey } from '../driver/canary.ts';
import { ClusterDriver } from '../driver/cluster.ts';
import { createNodeDriver } from '../driver/node-driver.ts';
import { SentinelDriver } from '../driver/sentinel.ts';
import { subscriberFor } from '../driver/subscriber.ts';
import type { Driver, NodeDriverFactory } from '../driver/types.ts';
import type { ValidConnectOptions } from '../options/index.ts';

/** The driver for `cluster` or `sentinel`, undefined for the other topologies. */
export function topologyDriver(valid: ValidConnectOptions): Driver | undefined {
  const tracking = valid.notifications !== 'polling';
  const factory: NodeDriverFactory = (url, track, canaryKey) =>
    createNodeDriver(valid.driver, { url, tracking: track, canaryKey, commandTimeout: valid.commandTimeout });
  const { durability, prefix } = valid;
  if (valid.cluster !== undefined) {
    return new ClusterDriver({ rootNodes: valid.cluster.rootNodes, tracking, factory, durability, prefix });
  }
  if (valid.sentinel !== undefined) {
    const { name, sentinels } = valid.sentinel;
    const subscribe = subscriberFor(valid.driver);
    const canaryKey = defaultCanaryKey(prefix);
    return new SentinelDriver({ name, sentinels, tracking, factory, subscribe, durability, canaryKey });
  }
  return undefined;
}

/** Where connect() tried to reach, for ConnectError messages; undefined for the other topologies. */
export function topologyTarget(valid: ValidConnectOptions): string | undefined {
  if (valid.cluster !== undefined)
    return `the cluster (root nodes ${valid.cluster.rootNodes.map(redact).join(', ')})`;
  if (valid.sentinel !== undefined) {
    return `the master "${valid.sentinel.name}" of the sentinels ${valid.sentinel.sentinels.map(redact).join(', ')}`;
  }
  return undefined;
}
