import type { Cluster, Redis } from 'ioredis';
import { defaultTimeoutOptions, Mutex, TimeoutError } from 'redis-semaphore';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ioredisCluster, packageVersion, retryUntil } from './util.ts';

/**
 * redis-semaphore's Mutex on ioredis: one Mutex per acquisition, loss reported through onLockLost.
 * `tuned`: as a latency-minded user sets it up (issue 27): retryInterval 1 ms (the smallest its
 * timer allows) and ioredis auto-pipelining.
 */
const make = (tuned: boolean, interval = RETRY_MS): Contender => {
  const id = !tuned
    ? 'redis-semaphore'
    : interval === RETRY_MS
      ? 'redis-semaphore-tuned'
      : `redis-semaphore-poll-${interval}ms`;
  return {
    id,
    // The poll-interval variants only feed the latency-versus-load chart (section 2b).
    ...(tuned && interval !== RETRY_MS ? { scenarios: ['idleHandoff'] as const } : {}),
    keyOf: (name) => `mutex:${name}`,
    async info(): Promise<ContenderInfo> {
      return {
        id,
        label: tuned
          ? `redis-semaphore Mutex${interval === RETRY_MS ? ', tuned' : ''} (retryInterval ${interval} ms, auto-pipelining)`
          : 'redis-semaphore Mutex',
        library: 'redis-semaphore',
        version: packageVersion('redis-semaphore'),
        client: 'ioredis',
        clientVersion: packageVersion('ioredis'),
        api: 'new Mutex(client, name, { lockTimeout: ttl, onLockLost }); await mutex.acquire(); mutex.release()',
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
    connectCluster: async (rootNodes) => session(await ioredisCluster(rootNodes, tuned)),
  };

  function session(client: Redis | Cluster): ContenderClient {
    return {
      async acquire(name, { ttl, signal }) {
        const lost = new AbortController();
        const mutex = new Mutex(client, name, {
          lockTimeout: ttl,
          ...(tuned ? { retryInterval: interval } : {}),
          onLockLost: (error) => lost.abort(error),
        });
        await retryUntil(
          () => mutex.acquire(signal),
          (error) => error instanceof TimeoutError,
          signal,
        );
        return { signal: lost.signal, release: () => mutex.release() };
      },
      async close() {
        await client.quit();
      },
    };
  }
};

/** The tuned contenders' poll interval, ms. */
const RETRY_MS = 1;

export const redisSemaphore = make(false);
export const redisSemaphoreTuned = make(true);
/** The tuned set-up at longer poll intervals: the latency-versus-load chart's points. */
export const redisSemaphorePolls = [2, 5, 10].map((ms) => make(true, ms));
