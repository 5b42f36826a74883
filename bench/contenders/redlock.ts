import { ExecutionError, Redlock } from '@sesamecare-oss/redlock';
import type { Cluster, Redis } from 'ioredis';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, ioredisCluster, packageVersion, retryUntil, usingHandle } from './util.ts';

/**
 * @sesamecare-oss/redlock on ioredis, through `using()` (auto-extension, AbortSignal on failure).
 * `tuned`: retryDelay 1 ms with 1 ms of jitter (its smallest sane setting: 0 would spin) and
 * ioredis auto-pipelining; a longer `delay` takes half of it as jitter. retryCount stays at its
 * default: using() extends with the same settings, and 10,000 retries there would take 10-20 s to
 * report a lost lock (the caller's loop calls using() again when an acquisition runs out of retries).
 */
const make = (tuned: boolean, delay = 1): Contender => {
  const id = !tuned ? 'redlock' : delay === 1 ? 'redlock-tuned' : `redlock-poll-${delay}ms`;
  const TUNED = { retryDelay: delay, retryJitter: Math.max(1, delay / 2) };
  return {
    id,
    ...(tuned && delay !== 1 ? { scenarios: ['idleHandoff'] as const } : {}),
    keyOf: (name) => name,
    async info(): Promise<ContenderInfo> {
      // One throwaway instance to read the effective defaults back; it never connects.
      const settings = new Redlock([{} as never], tuned ? TUNED : {}).settings;
      return {
        id,
        label: tuned
          ? `@sesamecare-oss/redlock${delay === 1 ? ', tuned' : ''} (retryDelay ${delay} ± ${TUNED.retryJitter} ms, auto-pipelining)`
          : '@sesamecare-oss/redlock',
        library: '@sesamecare-oss/redlock',
        version: packageVersion('@sesamecare-oss/redlock'),
        client: 'ioredis',
        clientVersion: packageVersion('ioredis'),
        api: 'new Redlock([client]); redlock.using([name], ttl, routine)',
        lossSignal: 'the AbortSignal using() passes to the routine (aborts when auto-extension fails)',
        waiting:
          'using() retries retryCount times every retryDelay ± retryJitter ms; on ExecutionError it is called again',
        settings: { ...settings, ...(tuned ? { enableAutoPipelining: true } : {}) },
      };
    },
    connect: async (url) => session(await ioredisClient(url, tuned)),
    connectCluster: async (rootNodes) => session(await ioredisCluster(rootNodes, tuned)),
  };

  function session(client: Redis | Cluster): ContenderClient {
    const lock = new Redlock([client], tuned ? TUNED : {});
    return {
      acquire: (name, { ttl, signal }) =>
        retryUntil(() => usingHandle((routine) => lock.using([name], ttl, routine)), ExecutionError, signal),
      async close() {
        await client.quit();
      },
    };
  }
};

export const redlock = make(false);
export const redlockTuned = make(true);
/** The tuned set-up at longer retry delays: only the latency-versus-load chart (section 2b) runs them. */
export const redlockPolls = [2, 5, 10].map((ms) => make(true, ms));
