// The opt-in low-latency mode (connect option `lowLatency`, docs/low-latency.md): while a wait is
// younger than `window`, the instance sends one PING every `interval` ms, and none otherwise.
// Counted on the test's own server (INFO commandstats): nothing else here sends PING after connect.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertIdle, mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { info } from '../harness/resp.ts';

const redis = useRedis();

/** PINGs the server has run so far. */
const pings = async (): Promise<number> => {
  const field = (await info(redis.server.port, 'commandstats'))['cmdstat_ping'] ?? 'calls=0';
  return Number(/calls=(\d+)/.exec(field)?.[1] ?? 0);
};

describe(`low-latency mode (${mode})`, () => {
  test('a young wait sends a PING every interval; past the window it sends none', async () => {
    const prefix = uniquePrefix('warm');
    const holder = await redis.instance(prefix);
    const waiter = await redis.instance(prefix, 1_000, { lowLatency: { interval: 5, window: 400 } });
    const held = await holder.acquire('job', { ttl: 10_000 });
    const before = await pings();
    const waiting = waiter.acquire('job', { ttl: 10_000 });
    await sleep(250);
    const young = (await pings()) - before;
    // 250 ms at one per 5 ms is about 50; timers on a loaded machine fire late, never early.
    assert.ok(young >= 10, `expected PINGs while the wait is young, got ${young}`);
    assert.ok(young <= 60, `expected at most one PING per 5 ms, got ${young}`);
    await sleep(300);
    const old = await pings();
    await sleep(300);
    assert.equal(await pings(), old, 'no PING once the wait is older than the window');
    await held.release();
    const lease = await waiting;
    await lease.release();
    await assertIdle(waiter);
  });

  test('no PING for an acquisition that does not wait, nor after the last wait ended', async () => {
    const prefix = uniquePrefix('warm');
    const holder = await redis.instance(prefix);
    const waiter = await redis.instance(prefix, 1_000, { lowLatency: { interval: 5, window: 10_000 } });
    const before = await pings();
    for (let i = 0; i < 20; i++) await (await waiter.acquire(`free-${i}`)).release();
    assert.equal(await pings(), before, 'uncontended acquisitions never wait');
    const held = await holder.acquire('job', { ttl: 10_000 });
    const waiting = waiter.acquire('job', { ttl: 10_000 });
    await sleep(100);
    assert.ok((await pings()) > before, 'the wait sent PINGs');
    await held.release();
    const lease = await waiting;
    // The wait ended long before its window: the PINGs stop with it.
    await sleep(50);
    const ended = await pings();
    await sleep(300);
    assert.equal(await pings(), ended, 'no PING after the last wait ended');
    await lease.release();
  });

  test('close() ends a young wait and its PINGs', async () => {
    const prefix = uniquePrefix('warm');
    const holder = await redis.instance(prefix);
    const waiter = await redis.instance(prefix, 1_000, { lowLatency: { interval: 5, window: 10_000 } });
    const held = await holder.acquire('job', { ttl: 10_000 });
    const before = await pings();
    // Observed from the start: close() rejects it before close() itself resolves.
    const ended = waiter.acquire('job', { ttl: 10_000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await sleep(100);
    assert.ok((await pings()) > before, 'the wait sent PINGs');
    await waiter.close();
    assert.equal(((await ended) as { code?: string } | undefined)?.code, 'LEASEHOLD_ERR_CONNECTION_CLOSED');
    const closed = await pings();
    await sleep(300);
    assert.equal(await pings(), closed, 'no PING after close()');
    await held.release();
  });

  test('without lowLatency a wait sends no PING', async () => {
    const prefix = uniquePrefix('warm');
    const holder = await redis.instance(prefix);
    const waiter = await redis.instance(prefix);
    const held = await holder.acquire('job', { ttl: 10_000 });
    const before = await pings();
    const waiting = waiter.acquire('job', { ttl: 10_000 });
    await sleep(200);
    assert.equal(await pings(), before);
    await held.release();
    await (await waiting).release();
  });
});
