import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectionClosedError, Leasehold, LockReleasedError, LockTimeoutError } from '../../src/index.ts';
import {
  aborted,
  assertIdle,
  connect,
  mode,
  testDriver,
  testNotifications,
  tracking,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { startMasters } from '../harness/masters.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

const WORKER = new URL('./workers/primitives-worker.ts', import.meta.url).pathname;

const redis = useRedis();
const { instance } = redis;

async function workers(n: number, prefix: string, ttl: number): Promise<Worker[]> {
  const all = await Promise.all(
    Array.from({ length: n }, () => Worker.start(WORKER, { args: [redis.server.url, prefix, String(ttl)] })),
  );
  await Promise.all(all.map((w) => w.next((m) => m['type'] === 'ready', 20_000)));
  return all;
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe(`semaphore (${mode})`, () => {
  test('8 processes, limit 3: never more than 3 holders; multi-permit never over-commits', async () => {
    const prefix = uniquePrefix('sem');
    const procs = await workers(8, prefix, 1_000);
    try {
      for (const [i, w] of procs.entries()) {
        w.send({
          type: 'semaphore',
          name: 'pool',
          limit: 3,
          permits: i % 3 === 0 ? 2 : 1,
          iterations: 6,
          hold: 5,
        });
      }
      const done = await Promise.all(procs.map((w) => w.next((m) => m['type'] !== 'ready', 25_000)));
      for (const m of done) assert.equal(m['type'], 'done', JSON.stringify(m));
      const max = Math.max(...done.map((m) => Number(m['max'])));
      assert.ok(max <= 3, `at most 3 permits held at once, saw ${max}`);
      assert.ok(max >= 2, `the semaphore was contended (max ${max})`);
    } finally {
      await Promise.all(procs.map((w) => w.stop()));
    }
  });

  test('a SIGKILLed holder’s permits return after their TTL', async () => {
    const prefix = uniquePrefix('sem');
    const [holder] = await workers(1, prefix, 300);
    try {
      holder!.send({ type: 'semaphore-hold', name: 'crash', limit: 2, permits: 2 });
      await holder!.next((m) => m['type'] === 'held');
      const lh = await instance(prefix);
      const sem = lh.semaphore('crash', { limit: 2 });
      assert.equal(await sem.tryAcquire(), undefined);
      await holder!.kill();
      const started = performance.now();
      const lease = await within(sem.acquire({ timeout: 5_000 }), 3_000, 'permits return');
      const waited = performance.now() - started;
      assert.ok(waited < 700, `waited ${Math.round(waited)} ms for a 300 ms TTL`);
      assert.equal(await sem.count(), 1);
      await lease.release();
    } finally {
      await holder!.stop();
    }
  });

  test('a client with a skewed clock cannot steal permits (expiry uses Redis TIME)', async () => {
    const prefix = uniquePrefix('sem');
    const a = await instance(prefix, 2_000);
    const b = await instance(prefix, 2_000);
    const held = await a.semaphore('skew', { limit: 1 }).acquire();
    const realNow = Date.now;
    Date.now = () => realNow() + 3_600_000;
    try {
      assert.equal(await b.semaphore('skew', { limit: 1 }).tryAcquire(), undefined);
      assert.equal(await b.semaphore('skew', { limit: 1 }).count(), 1);
    } finally {
      Date.now = realNow;
    }
    await held.release();
  });

  test('multi-permit is all or nothing, and a release wakes a waiter in another instance', async () => {
    const prefix = uniquePrefix('sem');
    const a = await instance(prefix, tracking ? 10_000 : 1_000);
    const b = await instance(prefix);
    const semA = a.semaphore('multi', { limit: 3 });
    const semB = b.semaphore('multi', { limit: 3 });
    const two = await semA.acquire({ permits: 2 });
    assert.equal(await semB.tryAcquire({ permits: 2 }), undefined);
    assert.equal(await semA.count(), 2, 'the failed multi-permit attempt took nothing');
    const one = await semB.acquire({ timeout: 1_000 });
    const waiting = semB.acquire({ permits: 2, timeout: 5_000 });
    await sleep(50);
    const started = performance.now();
    await two.release();
    const got = await within(waiting, tracking ? 500 : 2_000, 'waiter wakes on release');
    if (tracking) assert.ok(performance.now() - started < 200, 'woken by the push, not a timer');
    assert.ok(got.fencingToken > one.fencingToken && one.fencingToken > two.fencingToken);
    assert.equal(await semA.count(), 3);
    await Promise.all([one.release(), got.release()]);
  });

  test('a waiter in the same instance wakes on a local release', async () => {
    const lh = await instance(uniquePrefix('sem'), 10_000);
    const sem = lh.semaphore('local', { limit: 1 });
    const first = await sem.acquire();
    const second = sem.acquire({ timeout: 2_000 });
    await sleep(20);
    await first.release();
    const lease = await within(second, 500, 'local waiter wakes');
    await lease.release();
  });

  test('permits extend while held and expire on their own', async () => {
    const lh = await instance(uniquePrefix('sem'), 200);
    const sem = lh.semaphore('ext', { limit: 2 });
    const lease = await sem.acquire();
    await sleep(600);
    assert.equal(lease.lost, false);
    assert.equal(await sem.count(), 1);
    await lease.release();
    assert.ok(lease.signal.reason instanceof LockReleasedError);
    assert.equal(await sem.count(), 0);
  });

  test('timeout and signal', async () => {
    const lh = await instance(uniquePrefix('sem'));
    const sem = lh.semaphore('t', { limit: 1 });
    const held = await sem.acquire();
    await assert.rejects(sem.acquire({ timeout: 50 }), LockTimeoutError);
    const controller = new AbortController();
    const waiting = sem.acquire({ signal: controller.signal });
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    await assert.rejects(sem.acquire({ signal: AbortSignal.abort(new Error('early')) }), /early/);
    await held.release();
  });

  test('bad input throws TypeError naming the option and value', async () => {
    const lh = await instance(uniquePrefix('sem'));
    assert.throws(() => lh.semaphore('x', { limit: 0 }), /"limit".*received 0/);
    assert.throws(() => lh.semaphore('x', { limit: 1.5 }), /"limit".*1\.5/);
    assert.throws(() => lh.semaphore('x', undefined as never), /"limit".*undefined/);
    assert.throws(() => lh.semaphore('', { limit: 1 }), /"name"/);
    const sem = lh.semaphore('x', { limit: 2 });
    await assert.rejects(sem.acquire({ permits: 3 }), /"permits".*received 3/);
    await assert.rejects(sem.acquire({ permits: 0 }), /"permits"/);
    await assert.rejects(sem.acquire({ timeout: -1 }), /"timeout".*-1/);
    await assert.rejects(sem.tryAcquire({ ttl: 0 }), /"ttl".*0/);
    await assert.rejects(sem.acquire({ limit: 3 } as never), /unknown option "limit"/);
  });

  test('quorum mode is refused with a TypeError that says why', async () => {
    await using masters = await startMasters(3);
    const lh = await Leasehold.connect({
      nodes: [...masters.urls],
      prefix: uniquePrefix('sem'),
      driver: testDriver,
      notifications: testNotifications,
    });
    try {
      assert.throws(() => lh.semaphore('q', { limit: 2 }), /semaphore\(\) is not available in quorum mode/);
      assert.throws(() => lh.readWriteLock('q'), TypeError);
      assert.throws(() => lh.fairLock('q'), TypeError);
      assert.throws(() => lh.election('q'), TypeError);
    } finally {
      await lh.close();
    }
  });

  test('close() rejects waiters, releases holders; no leaked listeners or timers', async () => {
    const prefix = uniquePrefix('sem');
    const lh = await connect(redis.server, { prefix, ttl: 1_000 });
    const baseline = timers();
    const sem = lh.semaphore('close', { limit: 1 });
    const held = await sem.acquire();
    const controller = new AbortController();
    const waiting = sem.acquire({ signal: controller.signal, timeout: 10_000 }).catch((e: unknown) => e);
    await sleep(20);
    await lh.close();
    assert.ok((await waiting) instanceof ConnectionClosedError);
    assert.ok((await aborted(held.signal)) instanceof LockReleasedError);
    assert.equal(await command(redis.server.port, ['ZCARD', `${prefix}:{close}:sem`]), 0);
    await assert.rejects(sem.acquire(), ConnectionClosedError);
    await assert.rejects(sem.count(), ConnectionClosedError);
    await assertIdle(lh);
    assert.ok(timers() <= baseline, 'no timers left behind');
  });

  test('no listeners or timers left once everything is released', async () => {
    const lh = await instance(uniquePrefix('sem'));
    const sem = lh.semaphore('leak', { limit: 1 });
    const controller = new AbortController();
    const held = await sem.acquire({ signal: controller.signal });
    const waiters = Array.from({ length: 5 }, () =>
      sem.acquire({ signal: controller.signal, timeout: 5_000 }),
    );
    await sleep(20);
    await held.release();
    for (const w of waiters) await (await w).release();
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0, 'signal listeners removed');
    await assertIdle(lh);
  });
});
