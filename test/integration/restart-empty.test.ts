// What a Redis restarted empty (no persistence) does to the promises of API.md, found by the
// fault matrix (test/fault, scenario restart-empty). Fixed by fencing tokens floored at the
// server's clock and by leases that abort when their connection drops (onDisconnect: 'abort').
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Lease, type Leasehold, LockLostError } from '../../src/index.ts';
import { aborted, mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { FaultProxy } from '../harness/proxy.ts';

const redis = useRedis();
const { instance } = redis;

describe(`Redis restarted empty (${mode})`, () => {
  test('fencing tokens stay above every earlier token for the name', async () => {
    const prefix = uniquePrefix();
    const lh = await instance(prefix, 1_000);
    await (await lh.acquire('fence')).release();
    const before = await lh.acquire('fence');
    await redis.server.restart();
    assert.ok((await within(aborted(before.signal), 5_000, 'holder aborts')) instanceof LockLostError);
    const after = await within(lh.acquire('fence', { timeout: 5_000 }), 6_000, 'acquire after restart');
    try {
      assert.ok(after.fencingToken > before.fencingToken, `${after.fencingToken} <= ${before.fencingToken}`);
    } finally {
      await after.release();
    }
  });

  // Until 2026-11-23 only the mutex seeded its counter from the server's clock: these four
  // restarted at 1 after an empty restart, below every token handed out before it.
  const primitives: [string, (lh: Leasehold) => Promise<Lease>][] = [
    ['semaphore', (lh) => lh.semaphore('sem', { limit: 2 }).acquire()],
    ['read lease', (lh) => lh.readWriteLock('rw').read()],
    ['write lease', (lh) => lh.readWriteLock('rw').write()],
    ['fair lock', (lh) => lh.fairLock('fair').acquire()],
    ['election term', (lh) => lh.election('el').campaign('me')],
  ];
  for (const [what, take] of primitives) {
    test(`${what}: fencing tokens stay above every earlier token for the name`, async () => {
      const lh = await instance(uniquePrefix(), 1_000);
      await (await take(lh)).release();
      const before = await take(lh);
      await redis.server.restart();
      await within(aborted(before.signal), 5_000, 'holder aborts');
      const after = await within(take(lh), 6_000, 'acquire after restart');
      try {
        assert.ok(
          after.fencingToken > before.fencingToken,
          `${after.fencingToken} <= ${before.fencingToken}`,
        );
      } finally {
        await after.release();
      }
    });
  }

  test("a holder's signal has aborted by the time another instance acquires the lock", async () => {
    const prefix = uniquePrefix();
    // The holder's round trips are slow, so it reconnects and re-verifies after the waiter has
    // reconnected and acquired: the order a loaded machine produces by chance.
    await using proxy = await FaultProxy.start(redis.server.port);
    const holder = await instance(prefix, 10_000, { url: proxy.url });
    const waiter = await instance(prefix, 10_000);
    const lease = await holder.acquire('x');
    proxy.setLatency(300);
    const waiting = waiter.acquire('x', { timeout: 8_000 });
    await redis.server.restart();
    const next = await within(waiting, 9_000, 'the waiter acquires after the restart');
    try {
      assert.equal(lease.signal.aborted, true, 'two holders trusted their lease at the same time');
    } finally {
      await next.release();
    }
  });
});
