import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConnectionClosedError, type Leasehold, LockReleasedError } from '../../src/index.ts';
import { aborted, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { keyOf, type Suite } from './suite.ts';

export function fairConformance(suite: Suite): void {
  describe('fair lock', () => {
    /** Resolves once `n` waiters are in the queue of `name`. */
    const queuedIs = (prefix: string, name: string, n: number) =>
      until(
        `${n} queued`,
        async () => (await suite.command(['ZCARD', keyOf(prefix, name, 'fair', 'queue')])) === n,
        { timeout: 2_000, interval: 2 },
      );

    test('waiters from several instances are served in exactly their arrival order', async () => {
      const { prefix, lhs } = await suite.instances(2_000, 2_000, 2_000);
      const holder = await lhs[0]!.fairLock('fifo').acquire();
      const order: number[] = [];
      const done: Promise<void>[] = [];
      for (let i = 0; i < 9; i++) {
        // Instances interleave, so that no local queue can fake the order.
        const pending = lhs[i % 3]!.fairLock('fifo').acquire({ timeout: 10_000 });
        done.push(
          pending.then(async (lease) => {
            order.push(i);
            await lease.release();
          }),
        );
        await queuedIs(prefix, 'fifo', i + 1);
      }
      await holder.release();
      await within(Promise.all(done), 8_000, 'every waiter served');
      assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
      await queuedIs(prefix, 'fifo', 0);
    });

    test('a release hands over to the waiter in another instance at once, not at its retry timer', async () => {
      const { prefix, lhs } = await suite.instances(10_000, 10_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const holder = await a.fairLock('wake').acquire();
      const waiting = b.fairLock('wake').acquire({ timeout: 8_000 });
      await queuedIs(prefix, 'wake', 1);
      const started = performance.now();
      await holder.release();
      // With a 10 s TTL the waiter's own timer is ~3 s away: only its turn key's change explains this.
      const next = await within(waiting, 5_000, 'the next waiter');
      assert.ok(performance.now() - started < 1_000, 'woken by the release');
      assert.ok(next.fencingToken > holder.fencingToken);
      await next.release();
    });

    test('an abandoned waiter ahead in line is skipped once its deadline passes (store clock)', async () => {
      const { prefix, lhs } = await suite.instances(10_000, 10_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const holder = await a.fairLock('ghost').acquire();
      // A waiter that queued and then died: first in line, deadline 400 ms from now.
      const arrival = await suite.command(['INCR', keyOf(prefix, 'ghost', 'fair', 'arrivals')]);
      await suite.command(['ZADD', keyOf(prefix, 'ghost', 'fair', 'queue'), Number(arrival), 'ghost']);
      const deadline = (await suite.serverMs()) + 400;
      await suite.command(['ZADD', keyOf(prefix, 'ghost', 'fair', 'deadlines'), deadline, 'ghost']);
      const waiting = b.fairLock('ghost').acquire({ timeout: 8_000 });
      await queuedIs(prefix, 'ghost', 2);
      const started = performance.now();
      await holder.release();
      const next = await within(waiting, 5_000, 'the waiter behind the dead one');
      const waited = performance.now() - started;
      // It must wait for the dead waiter's turn to lapse (FIFO), and not much longer.
      assert.ok(waited >= 200 && waited < 1_400, `waited ${Math.round(waited)} ms behind a 400 ms deadline`);
      await next.release();
      await queuedIs(prefix, 'ghost', 0);
    });

    test('a waiter that gives up leaves the queue; the one behind it is served next', async () => {
      const { prefix, lhs } = await suite.instances(10_000, 10_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const holder = await a.fairLock('quit').acquire();
      const controller = new AbortController();
      const first = b
        .fairLock('quit')
        .acquire({ signal: controller.signal })
        .catch((e: unknown) => e);
      await queuedIs(prefix, 'quit', 1);
      const second = a.fairLock('quit').acquire({ timeout: 8_000 });
      await queuedIs(prefix, 'quit', 2);
      controller.abort(new Error('changed my mind'));
      assert.match(String(await first), /changed my mind/);
      await queuedIs(prefix, 'quit', 1);
      await holder.release();
      const lease = await within(second, 1_000, 'the second waiter gets the turn');
      await lease.release();
    });

    test('tryAcquire does not jump the queue; a crashed holder delays it only until its TTL', async () => {
      const { prefix, lhs } = await suite.instances(10_000);
      const lock = lhs[0]!.fairLock('gap');
      await suite.command(['SET', keyOf(prefix, 'gap', 'fair', 'lock'), 'ghost', 'PX', 300]);
      assert.equal(await lock.tryAcquire(), undefined, 'held by the crashed holder');
      const started = performance.now();
      const waiting = lock.acquire({ timeout: 5_000 });
      await queuedIs(prefix, 'gap', 1);
      assert.equal(await lock.tryAcquire(), undefined, 'a waiter is first in line');
      const lease = await within(waiting, 3_000, 'served after the holder expired');
      const waited = performance.now() - started;
      assert.ok(waited >= 150 && waited < 1_300, `waited ${Math.round(waited)} ms for a 300 ms TTL`);
      await lease.release();
      const after = await lock.tryAcquire();
      assert.ok(after !== undefined && after.fencingToken > lease.fencingToken);
      await after.release();
    });

    test('close() rejects its waiters, releases its holder, and hands over to another instance', async () => {
      const { prefix, lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.fairLock('close').acquire();
      const mine = a
        .fairLock('close')
        .acquire({ timeout: 10_000 })
        .catch((e: unknown) => e);
      await queuedIs(prefix, 'close', 1);
      const theirs = b.fairLock('close').acquire({ timeout: 8_000 });
      await queuedIs(prefix, 'close', 2);
      await a.close();
      assert.ok((await mine) instanceof ConnectionClosedError);
      assert.ok((await aborted(held.signal)) instanceof LockReleasedError);
      await assert.rejects(a.fairLock('close').acquire(), ConnectionClosedError);
      const next = await within(theirs, 1_000, 'the other instance’s waiter');
      await next.release();
      await queuedIs(prefix, 'close', 0);
    });
  });
}
