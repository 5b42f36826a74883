// An acquire's first attempt goes out before any wait exists (Engine.acquire's fast path). Its
// caller's timeout and signal still end the call at once while that attempt is out, and what the
// attempt took once the caller had gone goes back at once rather than at the end of its TTL (or
// never: the lease it makes is renewed). Callers behind it in this process queue behind it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockTimeoutError } from '../../src/index.ts';
import { assertIdle, connect, lockKey, mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
/** Each way: an attempt's reply comes 2 x LATENCY after it goes out. */
const LATENCY = 400;
/** Far beyond the test: a key still there was not given back, it did not lapse. */
const TTL = 60_000;

describe(`an acquire's first attempt (${mode})`, () => {
  for (const how of ['timeout', 'signal'] as const) {
    test(`its ${how} ends the call while the attempt is out; the lock the attempt took goes back at once`, async () => {
      await using proxy = await FaultProxy.start(redis.server.port);
      const prefix = uniquePrefix('first');
      const lh = await connect(redis.server, { url: proxy.url, prefix, ttl: TTL });
      try {
        proxy.setLatency(LATENCY);
        const controller = new AbortController();
        const startedAt = performance.now();
        const call = lh.acquire(
          'free',
          how === 'timeout' ? { timeout: 50 } : { signal: controller.signal, timeout: 30_000 },
        );
        if (how === 'signal') setTimeout(() => controller.abort(new Error('caller gave up')), 50);
        const error = await within(call, 2 * LATENCY, 'the call').then(
          () => undefined,
          (e: unknown) => e,
        );
        const took = performance.now() - startedAt;
        if (how === 'timeout') assert.ok(error instanceof LockTimeoutError, String(error));
        else assert.equal((error as Error | undefined)?.message, 'caller gave up');
        assert.ok(took < 2 * LATENCY, `ended after ${Math.round(took)} ms, before the attempt's reply`);
        // The attempt reached Redis and took the free name after its caller had gone.
        const key = lockKey(prefix, 'free');
        await until(
          'the late attempt took the name',
          async () => (await command(redis.server.port, ['EXISTS', key])) === 1,
          { timeout: 4 * LATENCY },
        );
        await until(
          'the name given back',
          async () => (await command(redis.server.port, ['EXISTS', key])) === 0,
          { timeout: 10 * LATENCY },
        );
        await assertIdle(lh);
      } finally {
        await lh.close();
      }
    });
  }

  test('a caller whose first attempt found the lock held: its lease says when it asked, not when that attempt came back', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const prefix = uniquePrefix('first');
    const holder = await connect(redis.server, { prefix, ttl: TTL });
    const lh = await connect(redis.server, { url: proxy.url, prefix, ttl: TTL });
    try {
      const held = await holder.acquire('asked');
      proxy.setLatency(LATENCY);
      const asked = Date.now();
      const call = lh.acquire('asked', { owner: 'waiter' });
      // Let go once the first attempt's busy reply is back (2 x LATENCY) and the wait began.
      await new Promise((resolve) => setTimeout(resolve, 3 * LATENCY));
      await held.release();
      const lease = await within(call, 10 * LATENCY, 'the waiter');
      const [h] = (await holder.inspect('asked'))?.holders ?? [];
      assert.equal(h?.token, lease.token);
      // Before, the wait stamped its value when the first attempt came back: 2 x LATENCY late.
      assert.ok(
        h?.since !== undefined && h.since - asked < LATENCY,
        `since ${h?.since === undefined ? '?' : h.since - asked} ms after the call`,
      );
      await lease.release();
    } finally {
      await Promise.all([holder.close(), lh.close()]);
    }
  });

  test('callers of this process behind a first attempt out wait in line behind it, and all get through', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const lh = await connect(redis.server, { url: proxy.url, prefix: uniquePrefix('first'), ttl: TTL });
    try {
      proxy.setLatency(20);
      const order: number[] = [];
      await within(
        Promise.all(
          Array.from({ length: 5 }, async (_, i) => {
            const lease = await lh.acquire('line', { timeout: 20_000 });
            order.push(i);
            await lease.release();
          }),
        ),
        15_000,
        'five callers of one instance',
      );
      // The first caller's attempt was the one out: it took the name first.
      assert.equal(order[0], 0, `order ${order.join(',')}`);
      assert.equal(order.length, 5);
      await assertIdle(lh);
    } finally {
      await lh.close();
    }
  });
});
