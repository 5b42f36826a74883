import { defaultTimeoutOptions, Semaphore, TimeoutError } from 'redis-semaphore';
import type { Leasehold } from '../../src/index.ts';
import { type Build, load } from './leasehold.ts';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ownVersion, packageVersion, retryUntil } from './util.ts';

/**
 * Semaphores of limit 1, so that the handoff scenarios measure a permit's handoff between
 * processes as they do a mutex's: leasehold's direct grant of permits (issue 27 item 1) against
 * redis-semaphore's Semaphore polling, at its defaults and tuned (retryInterval 1 ms,
 * auto-pipelining); and leasehold's fair lock and write lease, which no peer has. Only the
 * handoff scenarios run them.
 */
const SCENARIOS = ['handoff', 'idleHandoff'] as const;
const LIMIT = 1;

/**
 * The leasehold primitives besides the mutex whose waiters a release grants to directly (issue 27
 * item 1), each at one holder at a time so that the handoff scenarios time it exactly as they
 * time a mutex: a semaphore of limit 1 (a permit), a fair lock (the first in line), and a
 * read-write lock's write lease (a waiting writer).
 */
const PRIMITIVES = {
  semaphore: {
    label: `semaphore, limit ${LIMIT}`,
    keyOf: (name: string) => `leasehold:{${name}}:sem`,
    api: `lh.semaphore(name, { limit: ${LIMIT} }).acquire({ ttl }); lease.release()`,
    waiting: 'a direct grant of the freed permit, or the release counter’s push; no polling',
    take: (lh: Leasehold, name: string, options: AcquireOptions) =>
      lh.semaphore(name, { limit: LIMIT }).acquire(options),
  },
  fair: {
    label: 'fair lock',
    keyOf: (name: string) => `leasehold:{${name}}:fair`,
    api: 'lh.fairLock(name).acquire({ ttl }); lease.release()',
    waiting: 'a direct grant to the first in line, or its turn key’s push; no polling',
    take: (lh: Leasehold, name: string, options: AcquireOptions) => lh.fairLock(name).acquire(options),
  },
  write: {
    label: 'read-write lock, write lease',
    keyOf: (name: string) => `leasehold:{${name}}:rw:writer`,
    api: 'lh.readWriteLock(name).write({ ttl }); lease.release()',
    waiting: 'a direct grant to a registered waiting writer, or the writer key’s push; no polling',
    take: (lh: Leasehold, name: string, options: AcquireOptions) => lh.readWriteLock(name).write(options),
  },
} as const;

type AcquireOptions = { ttl: number; signal?: AbortSignal };

export function leaseholdPrimitive(
  driver: 'node-redis' | 'ioredis',
  kind: keyof typeof PRIMITIVES,
  build: Build = 'current',
): Contender {
  const baseline = build === 'baseline';
  const primitive = PRIMITIVES[kind];
  const id = `leasehold-${baseline ? 'baseline-' : ''}${driver}-${kind}`;
  return {
    id,
    ...(baseline ? { baseline: true } : {}),
    scenarios: SCENARIOS,
    keyOf: primitive.keyOf,
    async info(): Promise<ContenderInfo> {
      return {
        id,
        label: baseline
          ? `leasehold ${primitive.label} @ ${process.env['BENCH_LEASEHOLD_BASELINE_COMMIT'] ?? 'baseline'} (${driver})`
          : `leasehold ${primitive.label} (${driver})`,
        library: 'leasehold',
        version: baseline
          ? `baseline: ${process.env['BENCH_LEASEHOLD_BASELINE_NOTE'] ?? 'not built'}`
          : `${ownVersion()} (this repository; ${process.env['BENCH_LEASEHOLD_NOTE'] ?? 'src/ through tsx'})`,
        client: driver === 'node-redis' ? 'redis' : 'ioredis',
        clientVersion: packageVersion(driver === 'node-redis' ? 'redis' : 'ioredis'),
        api: primitive.api,
        lossSignal: 'lease.signal',
        waiting: primitive.waiting,
        settings: {
          driver,
          notifications: 'tracking',
          retryDelay: 100,
          ...(kind === 'semaphore' ? { limit: LIMIT } : {}),
        },
      };
    },
    async connect(url: string): Promise<ContenderClient> {
      const { Leasehold } = await load(build);
      await import(driver === 'node-redis' ? 'redis' : 'ioredis');
      const lh = await Leasehold.connect({ url, driver });
      return {
        async acquire(name, { ttl, signal }) {
          const lease = await primitive.take(lh, name, { ttl, ...(signal ? { signal } : {}) });
          return {
            signal: lease.signal,
            release: async () => {
              await lease.release();
            },
          };
        },
        close: () => lh.close(),
      };
    },
  };
}

function redisSemaphoreOf(tuned: boolean): Contender {
  const id = `redis-semaphore-semaphore${tuned ? '-tuned' : ''}`;
  return {
    id,
    scenarios: SCENARIOS,
    async info(): Promise<ContenderInfo> {
      return {
        id,
        label: `redis-semaphore Semaphore, limit ${LIMIT}${tuned ? ', tuned (retryInterval 1 ms, auto-pipelining)' : ''}`,
        library: 'redis-semaphore',
        version: packageVersion('redis-semaphore'),
        client: 'ioredis',
        clientVersion: packageVersion('ioredis'),
        api: `new Semaphore(client, name, ${LIMIT}, { lockTimeout: ttl, onLockLost }); acquire(); release()`,
        lossSignal: 'onLockLost callback',
        waiting: 'acquire() polls every retryInterval ms; on TimeoutError called again',
        settings: {
          ...defaultTimeoutOptions,
          ...(tuned ? { retryInterval: 1, enableAutoPipelining: true } : {}),
          acquireAttemptsLimit: String(defaultTimeoutOptions.acquireAttemptsLimit),
        },
      };
    },
    async connect(url: string): Promise<ContenderClient> {
      const client = await ioredisClient(url, tuned);
      return {
        async acquire(name, { ttl, signal }) {
          const lost = new AbortController();
          const semaphore = new Semaphore(client, name, LIMIT, {
            lockTimeout: ttl,
            ...(tuned ? { retryInterval: 1 } : {}),
            onLockLost: (error) => lost.abort(error),
          });
          await retryUntil(
            () => semaphore.acquire(signal),
            (error) => error instanceof TimeoutError,
            signal,
          );
          return { signal: lost.signal, release: () => semaphore.release() };
        },
        async close() {
          await client.quit();
        },
      };
    },
  };
}

export const semaphoreContenders: readonly Contender[] = [
  leaseholdPrimitive('node-redis', 'semaphore'),
  leaseholdPrimitive('node-redis', 'semaphore', 'baseline'),
  leaseholdPrimitive('ioredis', 'semaphore'),
  leaseholdPrimitive('ioredis', 'semaphore', 'baseline'),
  redisSemaphoreOf(false),
  redisSemaphoreOf(true),
  // No peer has a fair lock or a read-write lock: these rows stand beside leasehold's mutex.
  leaseholdPrimitive('node-redis', 'fair'),
  leaseholdPrimitive('ioredis', 'fair'),
  leaseholdPrimitive('node-redis', 'write'),
  leaseholdPrimitive('ioredis', 'write'),
];
