// A caller that gives up while its attempt is still on its way, then loses that attempt's reply
// with the connection: the attempt may have taken the key, so it is given back once Redis answers
// again, not left to its TTL. The simulation found it (seed 553): the wait had ended before the
// attempt failed, and the give-back it then owed was recorded on a wait nobody would end again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockTimeoutError } from '../../src/index.ts';
import { connect, mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';

const redis = useRedis({ proxy: true });
/** Far longer than the test: a key left to its TTL fails it. */
const TTL = 60_000;

describe(`a wait that ended before its attempt failed (${mode})`, () => {
  test('the key the attempt took is given back once the connection is back', async () => {
    const prefix = uniquePrefix('inflight');
    const lh = await connect(redis.server, { url: redis.proxy.url, prefix, ttl: TTL });
    const other = await redis.instance(prefix, TTL);
    try {
      // Replies to lh come late: its attempt runs on Redis at once and takes the free key, its
      // caller times out before the reply, and the reset then loses the reply.
      redis.proxy.setLatency(400, 'down');
      const gaveUp = await lh.acquire('job', { timeout: 50 }).catch((error: unknown) => error);
      assert.ok(gaveUp instanceof LockTimeoutError, String(gaveUp));
      // (Polled: a stalled event loop may run the timeout before the proxy passes the attempt on.)
      await until(
        'the attempt to take the key',
        async () => (await other.inspect('job'))?.holders.length === 1,
        {
          timeout: 5_000,
          interval: 10,
        },
      );
      await sleep(100);
      redis.proxy.resetAll();
      redis.proxy.setLatency(0);
      const started = Date.now();
      const lease = await other.acquire('job', { timeout: 10_000 });
      assert.ok(Date.now() - started < 10_000);
      await lease.release();
    } finally {
      redis.proxy.setLatency(0);
      await lh.close();
    }
  });
});
