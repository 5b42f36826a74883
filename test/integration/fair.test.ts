import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectionClosedError, type Lease, LockReleasedError, LockTimeoutError } from '../../src/index.ts';
import {
  aborted,
  assertIdle,
  connect,
  mode,
  tracking,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

const WORKER = new URL('./workers/primitives-worker.ts', import.meta.url).pathname;

const redis = useRedis();
const { instance } = redis;

const queued = (prefix: string, name: string) =>
  command(redis.server.port, ['ZCARD', `${prefix}:{${name}}:fair:queue`]) as Promise<number>;
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe(`fair lock (${mode})`, () => {
  test('20 waiters from 4 instances are granted in exactly their arrival order', async () => {
    const prefix = uniquePrefix('fair');
    const lhs = await Promise.all([0, 1, 2, 3].map(() => instance(prefix, 2_000)));
    const holder = await lhs[0]!.fairLock('fifo').acquire();
    const order: number[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      // Instances interleave, so local queues cannot fake the order.
      const pending = lhs[(i * 3) % 4]!.fairLock('fifo').acquire({ timeout: 15_000 });
      done.push(
        pending.then(async (lease) => {
          order.push(i);
          await sleep(1);
          await lease.release();
        }),
      );
      await until(`waiter ${i} queued`, async () => (await queued(prefix, 'fifo')) === i + 1, {
        timeout: 2_000,
        interval: 2,
      });
    }
    await holder.release();
    await within(Promise.all(done), 10_000, 'every waiter served');
    assert.deepEqual(
      order,
      Array.from({ length: 20 }, (_, i) => i),
    );
    assert.equal(await queued(prefix, 'fifo'), 0);
  });

  test('a release wakes only the next waiter (no herd)', { skip: !tracking && 'needs pushes' }, async () => {
    const prefix = uniquePrefix('fair');
    const lhs = await Promise.all(Array.from({ length: 8 }, () => instance(prefix, 10_000)));
    const holder = await lhs[0]!.fairLock('herd').acquire();
    const waiting: Promise<Lease>[] = [];
    for (let i = 1; i < 8; i++) {
      waiting.push(lhs[i]!.fairLock('herd').acquire({ timeout: 5_000 }));
      await until('queued', async () => (await queued(prefix, 'herd')) === i, {
        timeout: 2_000,
        interval: 2,
      });
    }
    await sleep(20);
    const calls = async () => {
      const info = String(await command(redis.server.port, ['INFO', 'commandstats']));
      const match = /cmdstat_evalsha:calls=(\d+)/.exec(info);
      return Number(match?.[1] ?? 0);
    };
    const before = await calls();
    await holder.release();
    const next = await within(waiting[0]!, 1_000, 'next waiter');
    await sleep(50);
    const used = (await calls()) - before;
    // The release (which grants the lock), the grantee's claim (its first extension: a grant
    // holds the lock for the claim window only) and its grant note (when it got the lock, for
    // inspection: note-granted.lua, 50 ms on), and the one attempt of the waiter the release woke next in
    // line (it learns when that window ends, in case the claim never comes); one more when a
    // waiter's registration refresh falls in the window. Not one attempt per waiter.
    assert.ok(used <= 5, `${used} scripts ran for one hand-over with 6 more waiting`);
    await next.release();
    for (const w of waiting.slice(1)) await (await w).release();
  });

  test('a waiter SIGKILLed while queued delays the next only until its deadline', async () => {
    const prefix = uniquePrefix('fair');
    const lh = await instance(prefix, 2_000);
    const holder = await lh.fairLock('crash').acquire();
    const worker = await Worker.start(WORKER, { args: [redis.server.url, prefix, '300'] });
    try {
      await worker.next((m) => m['type'] === 'ready', 20_000);
      worker.send({ type: 'fair', name: 'crash', id: 'w', hold: 10_000 });
      await worker.next((m) => m['type'] === 'queued');
      await until('worker queued', async () => (await queued(prefix, 'crash')) === 1, { timeout: 2_000 });
      const behind = lh.fairLock('crash').acquire({ timeout: 5_000 });
      await until('parent queued', async () => (await queued(prefix, 'crash')) === 2, { timeout: 2_000 });
      await worker.kill();
      const killedAt = performance.now();
      await holder.release();
      const lease = await behind;
      const waited = performance.now() - killedAt;
      // The dead waiter's place lapses 300 ms (its ttl) after its last refresh, by Redis's clock.
      assert.ok(waited < 750, `the next waiter waited ${Math.round(waited)} ms behind a dead one`);
      await lease.release();
    } finally {
      await worker.stop();
    }
  });

  test('a waiter that gives up leaves the queue; the one behind it is served next', async () => {
    const prefix = uniquePrefix('fair');
    const a = await instance(prefix, 10_000);
    const b = await instance(prefix, 10_000);
    const holder = await a.fairLock('quit').acquire();
    const controller = new AbortController();
    const first = b
      .fairLock('quit')
      .acquire({ signal: controller.signal })
      .catch((e: unknown) => e);
    await until('first queued', async () => (await queued(prefix, 'quit')) === 1, { timeout: 2_000 });
    const second = a.fairLock('quit').acquire({ timeout: 3_000 });
    await until('second queued', async () => (await queued(prefix, 'quit')) === 2, { timeout: 2_000 });
    controller.abort(new Error('changed my mind'));
    assert.match(String(await first), /changed my mind/);
    await until('first left', async () => (await queued(prefix, 'quit')) === 1, { timeout: 2_000 });
    await holder.release();
    const lease = await within(second, tracking ? 500 : 2_000, 'second gets the turn');
    assert.equal(await queued(prefix, 'quit'), 0);
    await lease.release();
  });

  test('a crashed holder delays the first waiter only until its TTL', async () => {
    const prefix = uniquePrefix('fair');
    const b = await instance(prefix, 10_000);
    // A holder that nobody extends, as if its process had died.
    await command(redis.server.port, ['SET', `${prefix}:{gap}:fair`, 'ghost', 'PX', '100']);
    const second = b.fairLock('gap').acquire({ timeout: 3_000 });
    await until('queued', async () => (await queued(prefix, 'gap')) === 1, { timeout: 2_000 });
    const started = performance.now();
    const lease = await within(second, 1_500, 'served after the holder expired');
    assert.ok(performance.now() - started < 400);
    await lease.release();
  });

  test('tryAcquire does not jump the queue; fencing tokens increase', async () => {
    const prefix = uniquePrefix('fair');
    const lh = await instance(prefix);
    const lock = lh.fairLock('try');
    const first = await lock.tryAcquire();
    assert.ok(first);
    assert.equal(await lock.tryAcquire(), undefined);
    const waiting = lock.acquire({ timeout: 2_000 });
    await until('queued', async () => (await queued(prefix, 'try')) === 1, { timeout: 2_000 });
    await first.release();
    assert.equal(await lock.tryAcquire(), undefined, 'the waiter is first in line');
    const second = await waiting;
    assert.ok(second.fencingToken > first.fencingToken);
    await second.release();
  });

  test('bad input, timeout and signal', async () => {
    const lh = await instance(uniquePrefix('fair'));
    assert.throws(() => lh.fairLock(''), /"name".*""/);
    const lock = lh.fairLock('x');
    await assert.rejects(lock.acquire({ ttl: 0 }), /"ttl".*0/);
    await assert.rejects(lock.acquire({ tll: 5 } as never), /unknown option "tll"/);
    const held = await lock.acquire();
    await assert.rejects(lock.acquire({ timeout: 40 }), LockTimeoutError);
    await assert.rejects(lock.acquire({ timeout: 0 }), LockTimeoutError);
    await assert.rejects(lock.acquire({ signal: AbortSignal.abort(new Error('early')) }), /early/);
    await held.release();
  });

  test('close() rejects waiters, releases holders; no leaked listeners or timers', async () => {
    const prefix = uniquePrefix('fair');
    const lh = await connect(redis.server, { prefix, ttl: 1_000 });
    const baseline = timers();
    const lock = lh.fairLock('close');
    const held = await lock.acquire();
    const controller = new AbortController();
    const waiting = lock.acquire({ signal: controller.signal, timeout: 10_000 }).catch((e: unknown) => e);
    await until('queued', async () => (await queued(prefix, 'close')) === 1, { timeout: 2_000 });
    await lh.close();
    assert.ok((await waiting) instanceof ConnectionClosedError);
    assert.ok((await aborted(held.signal)) instanceof LockReleasedError);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    assert.equal(await queued(prefix, 'close'), 0, 'the waiter left the queue');
    assert.equal(await command(redis.server.port, ['EXISTS', `${prefix}:{close}:fair`]), 0);
    await assert.rejects(lock.acquire(), ConnectionClosedError);
    await assertIdle(lh);
    assert.ok(timers() <= baseline, 'no timers left behind');
  });
});
