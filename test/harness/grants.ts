// What the direct-grant tests share (test/integration/direct-grants*.test.ts): instances that hear
// of nothing but grants, and waiting until Redis has a grant subscription or registrations.
import type { Leasehold } from '../../src/index.ts';
import { lockKey, type TestRedis } from './leasehold.ts';
import { until } from './poll.ts';
import { command } from './resp.ts';

/** How long a deaf instance's waiters go without attempting: far beyond every test's patience. */
export const SLOW_POLL = 10_000;

/**
 * The TTL of the holders that deaf waiters wait for. A busy attempt tells a waiter when the
 * holder's lease would expire, and a polling waiter attempts again then if that comes before
 * retryDelay: holders of the harness's default 1 s would wake deaf waiters within a second
 * without any grant.
 */
export const HOLDER_TTL = 30_000;

/** A read-write lock's key for `role` ('writer', 'waiting', 'grants', 'rqueue', ...). */
export const rwKey = (prefix: string, name: string, role: string) => `${lockKey(prefix, name)}:rw:${role}`;

export function grantProbes(redis: TestRedis) {
  const port = () => redis.server.port;
  /** Grant channels with a subscriber, under `prefix`. */
  const channels = async (prefix: string) =>
    ((await command(port(), ['PUBSUB', 'CHANNELS', `${prefix}:grants:*`])) as string[]).length;
  return {
    channels,
    /**
     * An instance whose waiters hear of nothing but grants for SLOW_POLL ms (polling, a long
     * retryDelay): a waiter of it served within a second was served by a grant.
     */
    deaf: (prefix: string) =>
      // Through useRedis, which closes it after the file; the library's default ttl (10 s).
      redis.instance(prefix, 10_000, { notifications: 'polling', retryDelay: SLOW_POLL }),
    /**
     * Opens `lh`'s grant subscription (one wait of it that finds a name held, here a mutex's:
     * the subscription is the instance's, for every primitive) and waits until Redis has it: from
     * then on a waiter of `lh` registers with its second attempt that finds a name held.
     */
    async subscribed(holder: Leasehold, lh: Leasehold, prefix: string): Promise<void> {
      const before = await channels(prefix);
      const held = await holder.acquire('subscribe');
      // The wait runs until Redis has the channel, not for a fixed time: the subscription opens
      // with the attempt after the first busy reply, which a short timeout could cut off (a reply
      // later than the timeout, a stalled test process).
      const ac = new AbortController();
      const waiting = lh.acquire('subscribe', { signal: ac.signal, timeout: 30_000 }).catch(() => undefined);
      try {
        await until('the grant subscription', async () => (await channels(prefix)) > before, {
          timeout: 10_000,
          interval: 10,
        });
      } finally {
        ac.abort();
        const lease = await waiting;
        await lease?.release();
        await held.release();
      }
    },
    /** Waits until the queue at `key` holds `n` registered waiters. */
    registered: (key: string, n: number) =>
      until(`${n} registered waiter(s)`, async () => (await command(port(), ['ZCARD', key])) === n, {
        timeout: 5_000,
        interval: 10,
      }),
  };
}
