import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionClosedError,
  type Lease,
  type Leasehold,
  LockReleasedError,
  LockTimeoutError,
} from '../../src/index.ts';
import { aborted, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { keyOf, type Suite } from './suite.ts';

export function rwlockConformance(suite: Suite): void {
  describe('read-write lock', () => {
    test('readers share; a writer excludes readers and other writers', async () => {
      const { lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const r1 = await a.readWriteLock('doc').read();
      const r2 = await within(b.readWriteLock('doc').read(), 1_000, 'a second reader');
      assert.equal(await a.readWriteLock('doc').tryWrite(), undefined, 'no writer while readers hold');
      await r1.release();
      assert.equal(await b.readWriteLock('doc').tryWrite(), undefined, 'one reader is enough to exclude');
      await r2.release();
      const w = await a.readWriteLock('doc').tryWrite();
      assert.ok(w !== undefined, 'free once both readers left');
      assert.ok(w.fencingToken > r2.fencingToken && r2.fencingToken > r1.fencingToken);
      assert.equal(await b.readWriteLock('doc').tryRead(), undefined, 'no reader while a writer holds');
      assert.equal(await b.readWriteLock('doc').tryWrite(), undefined, 'no second writer');
      await w.release();
      const r3 = await b.readWriteLock('doc').tryRead();
      assert.ok(r3 !== undefined);
      await r3.release();
    });

    test('a waiting writer keeps new readers out, and gets in when the last reader leaves', async () => {
      const { prefix, lhs } = await suite.instances(10_000, 10_000, 1_000);
      const [a, b, c] = lhs as [Leasehold, Leasehold, Leasehold];
      const reader = await a.readWriteLock('pref').read();
      const writing = b.readWriteLock('pref').write({ timeout: 8_000 });
      const waiting = keyOf(prefix, 'pref', 'rwlock', 'waiting');
      await until('the writer registered', async () => (await suite.command(['ZCARD', waiting])) === 1, {
        timeout: 2_000,
        interval: 5,
      });
      assert.equal(await c.readWriteLock('pref').tryRead(), undefined, 'writer preference');
      await assert.rejects(c.readWriteLock('pref').read({ timeout: 100 }), LockTimeoutError);
      const started = performance.now();
      await reader.release();
      // The writer's own timer is at the reader's 10 s expiry: only the release explains this.
      const writer = await within(writing, 5_000, 'the writer');
      assert.ok(performance.now() - started < 1_000, 'woken by the release');
      assert.equal(await suite.command(['ZCARD', waiting]), 0, 'no longer waiting');
      const next = c.readWriteLock('pref').read({ timeout: 5_000 });
      await writer.release();
      await (await within(next, 2_000, 'a reader after the writer')).release();
    });

    test('a writer that gives up lets readers in again at once', async () => {
      const { lhs } = await suite.instances(10_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const reader = await a.readWriteLock('quit').read();
      await assert.rejects(b.readWriteLock('quit').write({ timeout: 150 }), LockTimeoutError);
      const second = await within(a.readWriteLock('quit').read({ timeout: 5_000 }), 1_000, 'a reader');
      await Promise.all([reader.release(), second.release()]);
    });

    test("a writer's release wakes waiting readers in another instance; each reader extends alone", async () => {
      // The readers' TTL is 600 ms (renewed every 200 ms): a lapse needs a stall of about 400 ms.
      // With 200 ms (a 130 ms stall), the readers' check failed under CI-like load on memory.
      const { lhs } = await suite.instances(10_000, 600);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const writer = await a.readWriteLock('wake').write();
      const waiting: Promise<Lease>[] = [
        b.readWriteLock('wake').read({ timeout: 8_000 }),
        b.readWriteLock('wake').read({ timeout: 8_000 }),
      ];
      await sleep(50);
      const started = performance.now();
      await writer.release();
      const [r1, r2] = await within(Promise.all(waiting), 5_000, 'both readers');
      assert.ok(performance.now() - started < 1_000, 'woken by the release, not the 10 s TTL');
      assert.ok(r1!.fencingToken > writer.fencingToken && r2!.fencingToken > writer.fencingToken);
      await sleep(2_000);
      assert.equal(r1!.lost || r2!.lost, false, 'readers extended past three 600 ms TTLs');
      await r1!.release();
      assert.equal(await a.readWriteLock('wake').tryWrite(), undefined, 'one reader still inside');
      await r2!.release();
      const w = await a.readWriteLock('wake').tryWrite();
      assert.ok(w !== undefined);
      await w.release();
    });

    test('a crashed reader blocks a writer only until its TTL (store clock)', async () => {
      const { prefix, lhs } = await suite.instances(1_000);
      const readers = keyOf(prefix, 'dead', 'rwlock', 'readers');
      await suite.command(['ZADD', readers, (await suite.serverMs()) + 300, 'ghost']);
      assert.equal(await lhs[0]!.readWriteLock('dead').tryWrite(), undefined);
      const started = performance.now();
      const w = await within(lhs[0]!.readWriteLock('dead').write({ timeout: 5_000 }), 3_000, 'the writer');
      const waited = performance.now() - started;
      assert.ok(waited >= 150 && waited < 1_300, `waited ${Math.round(waited)} ms for a 300 ms TTL`);
      await w.release();
    });

    test('close() rejects a waiting writer, releases readers, and leaves no registration', async () => {
      const { prefix, lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const reader = await a.readWriteLock('close').read();
      const writer = a
        .readWriteLock('close')
        .write({ timeout: 10_000 })
        .catch((e: unknown) => e);
      const waiting = keyOf(prefix, 'close', 'rwlock', 'waiting');
      await until('the writer registered', async () => (await suite.command(['ZCARD', waiting])) === 1, {
        timeout: 2_000,
        interval: 5,
      });
      await a.close();
      assert.ok((await writer) instanceof ConnectionClosedError);
      assert.ok((await aborted(reader.signal)) instanceof LockReleasedError);
      await assert.rejects(a.readWriteLock('close').read(), ConnectionClosedError);
      assert.equal(await suite.command(['ZCARD', keyOf(prefix, 'close', 'rwlock', 'readers')]), 0);
      assert.equal(await suite.command(['ZCARD', waiting]), 0, 'the writer withdrew before close() resolved');
      const w = await within(
        b.readWriteLock('close').write({ timeout: 2_000 }),
        1_500,
        'a writer after close',
      );
      await w.release();
    });
  });
}
