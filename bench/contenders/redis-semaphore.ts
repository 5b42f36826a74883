import type { Cluster, Redis } from 'ioredis';
import { defaultTimeoutOptions, Mutex, Semaphore, TimeoutError } from 'redis-semaphore';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ioredisCluster, packageVersion, retryUntil } from './util.ts';

/** The tuned contenders' poll interval, ms. */
const RETRY_MS = 1;

/**
 * redis-semaphore's Mutex on ioredis: one Mutex per acquisition, loss reported through onLockLost.
 * `tuned`: as a latency-minded user sets it up (issue 27): retryInterval 1 ms (the smallest its
 * timer allows) and ioredis auto-pipelining. `semaphore`: its Semaphore of limit 1 instead, which
 * the handoff scenarios set beside leasehold's semaphore.
 */
const make = (tuned: boolean, interval = RETRY_MS, semaphore = false): Contender => {
  const base = semaphore ? 'redis-semaphore-semaphore' : 'redis-semaphore';
  const id = !tuned ? base : interval === RETRY_MS ? `${base}-tuned` : `${base}-poll-${interval}ms`;
  const what = semaphore ? 'Semaphore, limit 1' : 'Mutex';
  return {
    id,
    ...(tuned && interval !== RETRY_MS ? { scenarios: ['idleHandoff'] as const } : {}),
    ...(semaphore
      ? { scenarios: ['handoff', 'idleHandoff'] as const }
      : { keyOf: (name: string) => `mutex:${name}` }),
    async info(): Promise<ContenderInfo> {
      return {
        id,
        label: tuned
          ? `redis-semaphore ${what}${interval === RETRY_MS ? ', tuned' : ''} (retryInterval ${interval} ms, auto-pipelining)`
          : `redis-semaphore ${what}`,
        library: 'redis-semaphore',
        version: packageVersion('redis-semaphore'),
        client: 'ioredis',
        clientVersion: packageVersion('ioredis'),
        api: semaphore
          ? 'new Semaphore(client, name, 1, { lockTimeout: ttl, onLockLost }); acquire(); release()'
          : 'new Mutex(client, name, { lockTimeout: ttl, onLockLost }); await mutex.acquire(); mutex.release()',
        lossSignal: 'onLockLost callback (called when a refresh finds the lock gone)',
        waiting:
          'acquire() polls SET NX every retryInterval ms for acquireTimeout ms; on TimeoutError called again',
        settings: {
          ...defaultTimeoutOptions,
          ...(tuned ? { retryInterval: interval, enableAutoPipelining: true } : {}),
          acquireAttemptsLimit: String(defaultTimeoutOptions.acquireAttemptsLimit),
          refreshInterval: 'lockTimeout * 0.8',
          lockTimeout: 'set to the scenario ttl',
        },
      };
    },
    connect: async (url) => session(await ioredisClient(url, tuned)),
    ...(semaphore
      ? {}
      : { connectCluster: async (rootNodes) => session(await ioredisCluster(rootNodes, tuned)) }),
  };

  function session(client: Redis | Cluster): ContenderClient {
    return {
      async acquire(name, { ttl, signal }) {
        const lost = new AbortController();
        const options = {
          lockTimeout: ttl,
          ...(tuned ? { retryInterval: interval } : {}),
          onLockLost: (error: Error) => lost.abort(error),
        };
        const lock = semaphore ? new Semaphore(client, name, 1, options) : new Mutex(client, name, options);
        await retryUntil(() => lock.acquire(signal), TimeoutError, signal);
        return { signal: lost.signal, release: () => lock.release() };
      },
      async close() {
        await client.quit();
      },
    };
  }
};

export const redisSemaphore = make(false);
export const redisSemaphoreTuned = make(true);
/** The tuned set-up at longer poll intervals: only the latency-versus-load chart (section 2b) runs them. */
export const redisSemaphorePolls = [2, 5, 10].map((ms) => make(true, ms));
export const redisSemaphoreSemaphores = [make(false, RETRY_MS, true), make(true, RETRY_MS, true)];
