// Issue 13, item 1: `ttl: 1`, `1.5` or `2` passed validation, then acquire() on a free lock never
// succeeded (validity = ttl - elapsed - drift <= 0): it spun, 27,431 Redis commands in 4 s. A ttl
// that leaves no validity is now a TypeError naming the minimum, and an acquisition whose reply
// arrives already expired backs off by retryDelay instead of retrying at once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockTimeoutError } from '../../src/index.ts';
import { connect, mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { command, info } from '../harness/resp.ts';

const redis = useRedis({ proxy: true });

const tooShort = /option "ttl" must be at least 12 ms/;

/** Script calls Redis has run (every acquire attempt and release is one). */
async function scriptCalls(): Promise<number> {
  const stats = await info(redis.server.port, 'commandstats');
  let calls = 0;
  for (const name of ['cmdstat_evalsha', 'cmdstat_eval', 'cmdstat_fcall']) {
    calls += Number(/calls=(\d+)/.exec(stats[name] ?? '')?.[1] ?? 0);
  }
  return calls;
}

describe(`a ttl too short for any lease (${mode})`, () => {
  test('ttl 1, 1.5, 2 and 11 are TypeErrors naming the minimum, wherever a ttl is given', async () => {
    for (const ttl of [1, 1.5, 2, 11]) {
      // Closed if it connects after all, so that a failure does not leave the run hanging.
      const connecting = connect(redis.server, { ttl }).then(async (lh) => {
        await lh.close();
        return lh;
      });
      await assert.rejects(connecting, tooShort, `connect ttl ${ttl}`);
    }
    const lh = await connect(redis.server, { prefix: uniquePrefix('short') });
    try {
      for (const ttl of [1, 1.5, 2, 11]) {
        await assert.rejects(lh.acquire('a', { ttl, timeout: 100 }), TypeError);
        await assert.rejects(lh.tryAcquire('a', { ttl }), tooShort);
      }
      const lease = await lh.acquire('a', { ttl: 12, timeout: 1_000 });
      await assert.rejects(lease.extend(2), tooShort);
      await lease.release();
    } finally {
      await lh.close();
    }
  });

  test('an acquisition that arrives expired backs off by retryDelay instead of spinning', async () => {
    const lh = await connect(redis.server, {
      url: redis.proxy.url,
      prefix: uniquePrefix('late'),
      ttl: 12,
      retryDelay: 100,
    });
    try {
      // 8 ms each way: every reply arrives after the 10 ms of validity a 12 ms ttl leaves.
      redis.proxy.setLatency(8);
      await command(redis.server.port, ['CONFIG', 'RESETSTAT']);
      const error = await lh.acquire('late', { timeout: 1_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof LockTimeoutError, String(error));
      const calls = await scriptCalls();
      // Backing off: about 1000 / (100 + 16) attempts, each with its give-back release (~18).
      // Retrying at once made about 1000 / 16 attempts (~120 calls).
      assert.ok(calls <= 40, `${calls} script calls in 1 s`);
    } finally {
      redis.proxy.setLatency(0);
      await lh.close();
    }
  });
});
