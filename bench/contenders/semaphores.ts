import { defaultTimeoutOptions, Semaphore, TimeoutError } from 'redis-semaphore';
import { type Build, load } from './leasehold.ts';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ownVersion, packageVersion, retryUntil } from './util.ts';

/**
 * Semaphores of limit 1, so that the handoff scenarios measure a permit's handoff between
 * processes as they do a mutex's: leasehold's direct grant of permits (issue 27 item 1) against
 * redis-semaphore's Semaphore polling, at its defaults and tuned (retryInterval 1 ms,
 * auto-pipelining). Only the handoff scenarios run them.
 */
const SCENARIOS = ['handoff', 'idleHandoff'] as const;
const LIMIT = 1;

export function leaseholdSemaphore(driver: 'node-redis' | 'ioredis', build: Build = 'current'): Contender {
  const baseline = build === 'baseline';
  const id = `leasehold-${baseline ? 'baseline-' : ''}${driver}-semaphore`;
  return {
    id,
    ...(baseline ? { baseline: true } : {}),
    scenarios: SCENARIOS,
    keyOf: (name) => `leasehold:{${name}}:sem`,
    async info(): Promise<ContenderInfo> {
      return {
        id,
        label: baseline
          ? `leasehold semaphore @ ${process.env['BENCH_LEASEHOLD_BASELINE_COMMIT'] ?? 'baseline'}, limit ${LIMIT} (${driver})`
          : `leasehold semaphore, limit ${LIMIT} (${driver})`,
        library: 'leasehold',
        version: baseline
          ? `baseline: ${process.env['BENCH_LEASEHOLD_BASELINE_NOTE'] ?? 'not built'}`
          : `${ownVersion()} (this repository; ${process.env['BENCH_LEASEHOLD_NOTE'] ?? 'src/ through tsx'})`,
        client: driver === 'node-redis' ? 'redis' : 'ioredis',
        clientVersion: packageVersion(driver === 'node-redis' ? 'redis' : 'ioredis'),
        api: `lh.semaphore(name, { limit: ${LIMIT} }).acquire({ ttl }); lease.release()`,
        lossSignal: 'lease.signal',
        waiting: 'a direct grant of the freed permit, or the release counter’s push; no polling',
        settings: { driver, notifications: 'tracking', limit: LIMIT, retryDelay: 100 },
      };
    },
    async connect(url: string): Promise<ContenderClient> {
      const { Leasehold } = await load(build);
      await import(driver === 'node-redis' ? 'redis' : 'ioredis');
      const lh = await Leasehold.connect({ url, driver });
      return {
        async acquire(name, { ttl, signal }) {
          const lease = await lh
            .semaphore(name, { limit: LIMIT })
            .acquire({ ttl, ...(signal ? { signal } : {}) });
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
  leaseholdSemaphore('node-redis'),
  leaseholdSemaphore('node-redis', 'baseline'),
  leaseholdSemaphore('ioredis'),
  leaseholdSemaphore('ioredis', 'baseline'),
  redisSemaphoreOf(false),
  redisSemaphoreOf(true),
];
