import { defaultTimeoutOptions, Mutex, TimeoutError } from 'redis-semaphore';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, packageVersion, retryUntil } from './util.ts';

/** redis-semaphore's Mutex on ioredis: one Mutex per acquisition, loss reported through onLockLost. */
export const redisSemaphore: Contender = {
  id: 'redis-semaphore',
  keyOf: (name) => `mutex:${name}`,
  async info(): Promise<ContenderInfo> {
    return {
      id: 'redis-semaphore',
      label: 'redis-semaphore Mutex',
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
        acquireAttemptsLimit: String(defaultTimeoutOptions.acquireAttemptsLimit),
        refreshInterval: 'lockTimeout * 0.8',
        lockTimeout: 'set to the scenario ttl',
      },
    };
  },
  async connect(url: string): Promise<ContenderClient> {
    const client = await ioredisClient(url);
    return {
      async acquire(name, { ttl, signal }) {
        const lost = new AbortController();
        const mutex = new Mutex(client, name, {
          lockTimeout: ttl,
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
  },
};
