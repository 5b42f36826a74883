import type { Cluster, Redis } from 'ioredis';
import {
  createLock,
  DEFAULTS,
  IoredisAdapter,
  LockAcquisitionError,
  type SimpleLock,
} from 'redlock-universal';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ioredisCluster, packageVersion, retryUntil, usingHandle } from './util.ts';

const engines = '>=22.0.0';

/**
 * redlock-universal's SimpleLock on ioredis through `using()` (auto-extension, AbortSignal on
 * failure). `tuned`: retryDelay 1 ms, and ioredis auto-pipelining.
 */
const make = (tuned: boolean): Contender => ({
  id: tuned ? 'redlock-universal-tuned' : 'redlock-universal',
  keyOf: (name) => name,
  async info(): Promise<ContenderInfo> {
    const major = Number(process.versions.node.split('.')[0]);
    return {
      id: tuned ? 'redlock-universal-tuned' : 'redlock-universal',
      label: tuned ? 'redlock-universal, tuned (retryDelay 1 ms, auto-pipelining)' : 'redlock-universal',
      library: 'redlock-universal',
      version: packageVersion('redlock-universal'),
      client: 'ioredis',
      clientVersion: packageVersion('ioredis'),
      api: 'createLock({ adapter: new IoredisAdapter(client), key: name, ttl }) once per name; lock.using(routine)',
      lossSignal: 'the AbortSignal using() passes to the routine (aborts when auto-extension fails)',
      waiting:
        'acquire tries SET NX retryAttempts + 1 times, retryDelay ms apart; on LockAcquisitionError called again',
      settings: {
        retryAttempts: DEFAULTS.RETRY_ATTEMPTS,
        retryDelay: tuned ? TUNED.retryDelay : DEFAULTS.RETRY_DELAY,
        ...(tuned ? { enableAutoPipelining: true } : {}),
        performance: 'standard',
        circuitBreaker: true,
        autoExtensionThresholdRatio: DEFAULTS.AUTO_EXTENSION_THRESHOLD_RATIO,
        minExtensionInterval: DEFAULTS.MIN_EXTENSION_INTERVAL,
        defaultTtl: DEFAULTS.TTL,
        engines: `node ${engines} declared; runs here on Node ${process.versions.node}${major < 22 ? ' (below the declared range)' : ''}`,
      },
    };
  },
  connect: async (url) => session(await ioredisClient(url, tuned), tuned),
  connectCluster: async (rootNodes) => session(await ioredisCluster(rootNodes, tuned), tuned),
});

function session(client: Redis | Cluster, tuned: boolean): ContenderClient {
  const adapter = new IoredisAdapter(client);
  // README: create the lock once per resource and call using() on it; keyed by ttl too.
  const locks = new Map<string, SimpleLock>();
  const lockFor = (name: string, ttl: number): SimpleLock => {
    const id = `${ttl}\u0000${name}`;
    let lock = locks.get(id);
    if (lock === undefined) {
      lock = createLock({ adapter, key: name, ttl, ...(tuned ? TUNED : {}) }) as SimpleLock;
      locks.set(id, lock);
    }
    return lock;
  };
  return {
    acquire: (name, { ttl, signal }) =>
      retryUntil(
        () => usingHandle((routine) => lockFor(name, ttl).using(routine)),
        LockAcquisitionError,
        signal,
      ),
    async close() {
      locks.clear();
      await client.quit();
    },
  };
}

/** The tuned settings: retry every 1 ms (the caller's loop calls using() again after retryAttempts). */
const TUNED = { retryDelay: 1 };

export const redlockUniversal = make(false);
export const redlockUniversalTuned = make(true);
