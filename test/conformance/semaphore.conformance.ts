import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionClosedError,
  type Leasehold,
  LockReleasedError,
  LockTimeoutError,
  type Semaphore,
} from '../../src/index.ts';
import { aborted, within } from '../harness/leasehold.ts';
import { keyOf, type Suite } from './suite.ts';

export function semaphoreConformance(suite: Suite): void {
  describe('semaphore', () => {
    test('never more holders than the limit under contention', async () => {
      const { lhs } = await suite.instances(1_000, 1_000, 1_000);
      let inside = 0;
      let most = 0;
      // Until two were ever inside, a holder stays until a second one joins: a free permit must
      // be taken while others wait, however slow the store (a sleep here raced its round trips).
      let second!: () => void;
      const paired = new Promise<void>((resolve) => {
        second = resolve;
      });
      await Promise.all(
        lhs.flatMap((lh) =>
          [0, 1].map(async () => {
            const sem = lh.semaphore('pool', { limit: 2 });
            for (let i = 0; i < 6; i++) {
              const lease = await sem.acquire({ timeout: 10_000 });
              inside += 1;
              most = Math.max(most, inside);
              if (most === 2) second();
              await within(paired, 5_000, 'a second holder while one holds and others wait');
              await sleep(3);
              inside -= 1;
              await lease.release();
            }
          }),
        ),
      );
      assert.equal(most, 2, `at most (and, contended, exactly) 2 holders at once, saw ${most}`);
    });

    test('multi-permit is all or nothing; count() sees every instance’s permits', async () => {
      const { lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs.map((lh) => lh.semaphore('multi', { limit: 3 })) as [Semaphore, Semaphore];
      const two = await a.acquire({ permits: 2 });
      assert.equal(await b.count(), 2);
      assert.equal(await b.tryAcquire({ permits: 2 }), undefined);
      assert.equal(await b.count(), 2, 'the failed two-permit attempt took nothing');
      const one = await b.tryAcquire();
      assert.ok(one !== undefined, 'the third permit is free');
      assert.equal(await a.count(), 3);
      assert.equal(await a.tryAcquire(), undefined, 'full');
      await assert.rejects(a.acquire({ timeout: 0 }), LockTimeoutError);
      assert.equal(await two.release(), true);
      assert.equal(await b.count(), 1, 'a release gives back both permits');
      assert.ok(one.fencingToken > two.fencingToken);
      await one.release();
      assert.equal(await a.count(), 0);
    });

    test('a release wakes a waiter in another instance at once, not at the TTL', async () => {
      const { lhs } = await suite.instances(10_000, 10_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.semaphore('wake', { limit: 2 }).acquire({ permits: 2 });
      const waiting = b.semaphore('wake', { limit: 2 }).acquire({ timeout: 8_000 });
      await sleep(50);
      const started = performance.now();
      await held.release();
      const next = await within(waiting, 5_000, 'the waiter');
      // The waiter's own timer is set to the holder's 10 s TTL: only the release can explain this.
      assert.ok(performance.now() - started < 1_000, 'woken by the release');
      assert.ok(next.fencingToken > held.fencingToken);
      await next.release();
    });

    test('a crashed holder’s permit is reclaimed after its TTL (store clock), no later', async () => {
      const { prefix, lhs } = await suite.instances(1_000);
      const sem = lhs[0]!.semaphore('crash', { limit: 1 });
      // A permit nobody extends, as if its holder's process had died.
      const set = keyOf(prefix, 'crash', 'semaphore', 'set');
      await suite.command(['ZADD', set, (await suite.serverMs()) + 300, 'ghost:1']);
      assert.equal(await sem.count(), 1);
      assert.equal(await sem.tryAcquire(), undefined);
      const started = performance.now();
      const lease = await within(sem.acquire({ timeout: 5_000 }), 3_000, 'the reclaimed permit');
      const waited = performance.now() - started;
      assert.ok(waited >= 150 && waited < 1_300, `waited ${Math.round(waited)} ms for a 300 ms TTL`);
      assert.equal(await sem.count(), 1);
      assert.equal(await suite.command(['ZSCORE', set, 'ghost:1']), null, 'the dead permit is gone');
      await lease.release();
    });

    test('permits are extended while held and count() drops to 0 on release', async () => {
      // A 600 ms TTL, renewed every 200 ms: a lapse needs the loop or the store to stall for
      // about 400 ms. With 200 ms (a 130 ms stall), it failed under CI-like load on memory.
      const { lhs } = await suite.instances(600);
      const sem = lhs[0]!.semaphore('ext', { limit: 2 });
      const lease = await sem.acquire({ permits: 2 });
      await sleep(2_000);
      assert.equal(lease.lost, false, 'extended past three TTLs');
      assert.equal(await sem.count(), 2);
      await lease.release();
      assert.ok(lease.signal.reason instanceof LockReleasedError);
      assert.equal(await sem.count(), 0);
    });

    test('close() rejects waiters and gives back held permits', async () => {
      const { lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const sem = a.semaphore('close', { limit: 1 });
      const held = await sem.acquire();
      const waiting = sem.acquire({ timeout: 10_000 }).catch((e: unknown) => e);
      const other = b.semaphore('close', { limit: 1 }).acquire({ timeout: 5_000 });
      await sleep(20);
      await a.close();
      assert.ok((await waiting) instanceof ConnectionClosedError);
      assert.ok((await aborted(held.signal)) instanceof LockReleasedError);
      await assert.rejects(sem.count(), ConnectionClosedError);
      const next = await within(other, 2_000, 'the other instance’s waiter');
      assert.equal(await b.semaphore('close', { limit: 1 }).count(), 1);
      await next.release();
    });
  });
}
