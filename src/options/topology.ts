import { redact } from '../base/redact.ts';
import { fail, MAX_TTL } from './check.ts';

/** Redis Cluster: where to ask for the slot map (any live node; the rest is discovered). */
export interface ClusterOptions {
  /**
   * One or more nodes of the cluster, as `redis://host:port` URLs (or `{ url }` objects, the
   * shape node-redis's `createCluster` takes). Credentials and scheme of the first one are used
   * for every node discovered.
   * @example rootNodes: ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7000']
   */
  rootNodes: (string | { url: string })[];
  /**
   * Keep every mutex (and multiLock name) as this many keys in different slots, spread over the
   * cluster's masters, and hold a lease while a majority of them is held (rueidislock's
   * KeyMajority). A shard failover that loses one key, because the promoted replica had not
   * received the write, then loses no lease: the next extension puts the key back. Costs one
   * script call per key per acquisition and extension. An odd number from 3 to 9; leave it out
   * for one key per lock. Semaphores, read-write locks, fair locks and elections keep one key.
   * @default undefined (one key per lock)
   * @example cluster: { rootNodes: ['redis://10.0.0.1:7000'], keyMajority: 3 }
   */
  keyMajority?: number;
}

/** Redis Sentinel: which master to follow, and where to ask. */
export interface SentinelOptions {
  /**
   * The master name the sentinels monitor (`sentinel monitor <name> ...`).
   * @example name: 'mymaster'
   */
  name: string;
  /**
   * Sentinels as `redis://host:26379` URLs (or `{ host, port }` objects); asked in turn.
   * @example sentinels: ['redis://s1:26379', 'redis://s2:26379', 'redis://s3:26379']
   */
  sentinels: (string | { host: string; port: number })[];
}

/**
 * WAIT after every acquisition, of every primitive (and forceAcquire), until `replicas` replicas acknowledged
 * the write, else release it and throw DurabilityError. Narrows, but does not close, the window
 * in which a failover loses a lock: see docs/topologies.md.
 */
export interface DurabilityOptions {
  /**
   * Replicas that must acknowledge.
   * @example replicas: 1
   */
  replicas: number;
  /**
   * How long WAIT may block, in ms (counts against the lease's validity).
   * @default 100
   */
  timeout?: number;
}

export interface ValidTopology {
  cluster: { rootNodes: string[]; keyMajority: number | undefined } | undefined;
  sentinel: { name: string; sentinels: string[] } | undefined;
  durability: { replicas: number; timeout: number } | undefined;
}

const URL_PATTERN = /^rediss?:\/\/[^/\s]+/;

/** Validates `cluster`, `sentinel` and `durability`, and how they combine with the others. */
export function checkTopology(o: Record<string, unknown>): ValidTopology {
  const cluster = o['cluster'] === undefined ? undefined : checkCluster(o['cluster']);
  const sentinel = o['sentinel'] === undefined ? undefined : checkSentinel(o['sentinel']);
  if (cluster !== undefined && sentinel !== undefined) {
    fail('sentinel', 'left out when "cluster" is given (one topology at a time)', o['sentinel']);
  }
  const topology = cluster !== undefined ? 'cluster' : sentinel !== undefined ? 'sentinel' : undefined;
  if (topology !== undefined) {
    for (const other of ['url', 'client', 'nodes', 'backend'] as const) {
      if (o[other] !== undefined) fail(other, `left out when "${topology}" is given`, o[other]);
    }
  }
  const durability = o['durability'] === undefined ? undefined : checkDurability(o['durability']);
  if (durability !== undefined && topology === undefined) {
    fail('durability', 'used with "sentinel" or "cluster" (it waits for their replicas)', o['durability']);
  }
  return { cluster, sentinel, durability };
}

function record(value: unknown, option: string, expected: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(option, expected, value);
  return value as Record<string, unknown>;
}

function checkCluster(value: unknown): { rootNodes: string[]; keyMajority: number | undefined } {
  const expected = '{ rootNodes: [...], keyMajority? } with at least one redis:// URL';
  const { rootNodes, keyMajority, ...rest } = record(value, 'cluster', expected);
  if (Object.keys(rest).length > 0)
    fail('cluster', `${expected} (unknown key "${Object.keys(rest)[0]}")`, value);
  if (!Array.isArray(rootNodes) || rootNodes.length === 0)
    fail('cluster.rootNodes', 'a non-empty array', rootNodes);
  if (keyMajority !== undefined && (typeof keyMajority !== 'number' || ![3, 5, 7, 9].includes(keyMajority))) {
    fail('cluster.keyMajority', 'an odd number from 3 to 9', keyMajority);
  }
  return {
    keyMajority: keyMajority as number | undefined,
    rootNodes: rootNodes.map((node: unknown) => {
      const url = node !== null && typeof node === 'object' ? (node as { url?: unknown }).url : node;
      if (typeof url !== 'string' || !URL_PATTERN.test(url)) {
        fail(
          'cluster.rootNodes',
          'redis:// URLs or { url } objects',
          typeof node === 'string' ? redact(node) : node,
        );
      }
      return url;
    }),
  };
}

function checkSentinel(value: unknown): { name: string; sentinels: string[] } {
  const expected = '{ name, sentinels: [...] }';
  const { name, sentinels, ...rest } = record(value, 'sentinel', expected);
  if (Object.keys(rest).length > 0)
    fail('sentinel', `${expected} (unknown key "${Object.keys(rest)[0]}")`, value);
  if (typeof name !== 'string' || name === '') fail('sentinel.name', 'a non-empty string', name);
  if (!Array.isArray(sentinels) || sentinels.length === 0) {
    fail('sentinel.sentinels', 'a non-empty array', sentinels);
  }
  return {
    name,
    sentinels: sentinels.map((node: unknown) => {
      if (typeof node === 'string' && URL_PATTERN.test(node)) return node;
      if (node !== null && typeof node === 'object') {
        const { host, port } = node as { host?: unknown; port?: unknown };
        if (typeof host === 'string' && host !== '' && Number.isInteger(port)) {
          return `redis://${host.includes(':') ? `[${host}]` : host}:${port}`;
        }
      }
      return fail(
        'sentinel.sentinels',
        'redis:// URLs or { host, port } objects',
        typeof node === 'string' ? redact(node) : node,
      );
    }),
  };
}

function checkDurability(value: unknown): { replicas: number; timeout: number } {
  const expected = '{ replicas, timeout? }';
  const { replicas, timeout = 100, ...rest } = record(value, 'durability', expected);
  if (Object.keys(rest).length > 0) {
    fail('durability', `${expected} (unknown key "${Object.keys(rest)[0]}")`, value);
  }
  // Safe integers only: a larger one would reach WAIT as "1e+21", which Redis refuses at
  // acquire time (RedisCommandError) instead of here.
  if (typeof replicas !== 'number' || !Number.isSafeInteger(replicas) || replicas < 1) {
    fail('durability.replicas', `an integer from 1 to ${Number.MAX_SAFE_INTEGER}`, replicas);
  }
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_TTL) {
    // WAIT's timeout 0 means "forever": not something a lock acquisition should do. Beyond
    // MAX_TTL it would outlast any lease it waits for.
    fail('durability.timeout', `an integer number of milliseconds from 1 to ${MAX_TTL}`, timeout);
  }
  return { replicas, timeout };
}
