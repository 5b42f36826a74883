// What the direct-grant tests share (test/integration/direct-grants*.test.ts): instances that hear
// of nothing but grants, and waiting until Redis has a grant subscription or registrations.
import { Leasehold } from '../../src/index.ts';
import { type TestRedis, testDriver } from './leasehold.ts';
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
      Leasehold.connect({
        url: redis.server.url,
        driver: testDriver,
        prefix,
        notifications: 'polling',
        retryDelay: SLOW_POLL,
      }),
    /**
     * Runs `wait` (one wait of an instance that finds the name held, which opens its grant
     * subscription) and waits until Redis has that subscription: from then on a waiter of that
     * instance registers with its first attempt that finds the name held.
     */
    async subscribed(prefix: string, wait: () => Promise<void>): Promise<void> {
      const before = await channels(prefix);
      await wait();
      await until('the grant subscription', async () => (await channels(prefix)) > before, {
        timeout: 5_000,
        interval: 10,
      });
    },
    /** Waits until the queue at `key` holds `n` registered waiters. */
    registered: (key: string, n: number) =>
      until(`${n} registered waiter(s)`, async () => (await command(port(), ['ZCARD', key])) === n, {
        timeout: 5_000,
        interval: 10,
      }),
  };
}
