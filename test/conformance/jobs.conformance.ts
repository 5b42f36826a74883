// The jobs users have (issue 40) on every backend: lease modes (renew: false, minHold) on every
// primitive's acquire and try forms, the `with` forms, election.lead and isLeader, and
// lh.idempotent. Run by primitives.conformance.ts against the memory backend, Redis (both drivers,
// tracking and polling) and PostgreSQL.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  IdempotencyConflictError,
  type Lease,
  type Leasehold,
  LockLostError,
  OutcomeUnknownError,
} from '../../src/index.ts';
import { lockKey, within } from '../harness/leasehold.ts';
import type { Suite } from './suite.ts';

type Options = { ttl?: number; renew?: boolean; minHold?: number; timeout?: number };

/** Every primitive's acquire and try forms, with the lease options passed through. */
const FORMS: {
  kind: string;
  acquire(lh: Leasehold, name: string, o: Options): Promise<Lease>;
  attempt(lh: Leasehold, name: string, o: Options): Promise<Lease | undefined>;
}[] = [
  {
    kind: 'mutex',
    acquire: (lh, n, o) => lh.acquire(n, o),
    attempt: (lh, n, { timeout: _, ...o }) => lh.tryAcquire(n, o),
  },
  {
    kind: 'semaphore',
    acquire: (lh, n, o) => lh.semaphore(n, { limit: 1 }).acquire(o),
    attempt: (lh, n, { timeout: _, ...o }) => lh.semaphore(n, { limit: 1 }).tryAcquire(o),
  },
  {
    kind: 'write lease',
    acquire: (lh, n, o) => lh.readWriteLock(n).write(o),
    attempt: (lh, n, { timeout: _, ...o }) => lh.readWriteLock(n).tryWrite(o),
  },
  {
    kind: 'read lease (against a writer)',
    acquire: (lh, n, o) => lh.readWriteLock(n).read(o),
    attempt: (lh, n, { timeout: _, ...o }) => lh.readWriteLock(n).tryRead(o),
  },
  {
    kind: 'fair lock',
    acquire: (lh, n, o) => lh.fairLock(n).acquire(o),
    attempt: (lh, n, { timeout: _, ...o }) => lh.fairLock(n).tryAcquire(o),
  },
  {
    kind: 'election',
    acquire: (lh, n, o) => lh.election(n).campaign('v', o),
    attempt: (lh, n, o) =>
      lh
        .election(n)
        .campaign('v', { ...o, timeout: 0 })
        .catch(() => undefined),
  },
];

/** What keeps a read lease out: a writer (the others keep out a lease of their own kind). */
const blocker = (kind: string, lh: Leasehold, name: string, o: Options) =>
  kind.startsWith('read')
    ? lh.readWriteLock(name).tryWrite(o)
    : FORMS.find((f) => f.kind === kind)!.attempt(lh, name, o);

export function jobsConformance(suite: Suite): void {
  describe('lease modes', () => {
    for (const form of FORMS) {
      test(`${form.kind}: renew: false ends at its TTL; renewing holds on`, async () => {
        const { lhs } = await suite.instances(300, 300);
        const [a, b] = lhs as [Leasehold, Leasehold];
        const once = await form.acquire(a, 'once', { renew: false });
        const kept = await form.acquire(a, 'kept', {});
        await within(
          new Promise((resolve) => once.signal.addEventListener('abort', resolve, { once: true })),
          2_000,
          'the unrenewed lease ending',
        );
        assert.ok(once.signal.reason instanceof LockLostError, String(once.signal.reason));
        assert.equal(kept.lost, false);
        // Redis's TTL ends a few ms after the lease's validity (drift): wait for it, briefly.
        const next = await (form.kind.startsWith('read')
          ? b.readWriteLock('once').write({ timeout: 1_000 })
          : form.acquire(b, 'once', { timeout: 1_000 }));
        await next.release();
        await kept.release();
      });

      test(`${form.kind}: minHold keeps the name taken after an early release, then a waiter gets it`, async () => {
        const { lhs } = await suite.instances(2_000, 2_000);
        const [a, b] = lhs as [Leasehold, Leasehold];
        const held = await form.attempt(a, 'hold', { minHold: 500 });
        assert.ok(held !== undefined);
        const releasedAt = performance.now();
        assert.equal(await held.release(), true);
        assert.ok(held.signal.aborted, 'the lease ended for its holder');
        assert.equal(await blocker(form.kind, b, 'hold', {}), undefined, 'still taken within minHold');
        const next = await (form.kind.startsWith('read')
          ? b.readWriteLock('hold').write({ timeout: 3_000 })
          : form.acquire(b, 'hold', { timeout: 3_000 }));
        const waited = performance.now() - releasedAt;
        assert.ok(waited >= 400, `taken ${Math.round(waited)} ms after the release, within minHold`);
        await next.release();
      });
    }

    test('bad lease options are a TypeError naming the option', async () => {
      const { lhs } = await suite.instances(1_000);
      const lh = lhs[0]!;
      await assert.rejects(
        lh.acquire('x', { renew: 'no' as unknown as boolean }),
        /"renew" must be true or false/,
      );
      await assert.rejects(lh.tryAcquire('x', { minHold: -1 }), /"minHold" must be/);
    });
  });

  describe('with forms', () => {
    test('each passes the lease and a signal aborted by the caller, and releases on every path', async () => {
      const { lhs } = await suite.instances(2_000, 2_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const forms: [
        string,
        (fn: (l: Lease, s: AbortSignal) => Promise<unknown>, o: object) => Promise<unknown>,
      ][] = [
        ['withLock', (fn, o) => a.withLock('w1', fn, o)],
        ['withPermit', (fn, o) => a.semaphore('w2', { limit: 1 }).withPermit(fn, o)],
        ['withRead', (fn, o) => a.readWriteLock('w3').withRead(fn, o)],
        ['withWrite', (fn, o) => a.readWriteLock('w4').withWrite(fn, o)],
        ['fair withLock', (fn, o) => a.fairLock('w5').withLock(fn, o)],
      ];
      for (const [label, run] of forms) {
        assert.equal(await run(async (lease) => lease.fencingToken > 0n, {}), true, label);
        await assert.rejects(
          run(async () => Promise.reject(new Error(`boom ${label}`)), {}),
          /boom/,
        );
        const caller = new AbortController();
        const stopped = run(
          (_lease, signal) =>
            new Promise((_, reject) =>
              signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
            ),
          { signal: caller.signal },
        );
        caller.abort(new Error(`stop ${label}`));
        await assert.rejects(stopped, /stop/);
      }
      // Every name is free again: each form released whatever happened.
      assert.ok(await b.tryAcquire('w1').then((l) => l?.release()));
      assert.ok(
        await b
          .semaphore('w2', { limit: 1 })
          .tryAcquire()
          .then((l) => l?.release()),
      );
      assert.ok(
        await b
          .readWriteLock('w4')
          .tryWrite()
          .then((l) => l?.release()),
      );
      assert.ok(
        await b
          .fairLock('w5')
          .tryAcquire()
          .then((l) => l?.release()),
      );
    });
  });

  describe('election.lead', () => {
    test('one leader at a time; isLeader says which; the next leads once the leader stops', async () => {
      const { lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const stopA = new AbortController();
      const stopB = new AbortController();
      const led: string[] = [];
      const lead = (lh: Leasehold, who: string, stop: AbortController) =>
        lh.election('boss').lead(
          who,
          async (term) => {
            led.push(who);
            assert.equal(lh.election('boss').isLeader, true);
            assert.equal((who === 'a' ? b : a).election('boss').isLeader, false);
            // Lead until the term is lost or this leader is told to stop.
            await new Promise((resolve) => {
              term.signal.addEventListener('abort', resolve, { once: true });
              stop.signal.addEventListener('abort', resolve, { once: true });
            });
          },
          { signal: stop.signal },
        );
      const leadingA = lead(a, 'a', stopA);
      while (led.length < 1) await sleep(10);
      const leadingB = lead(b, 'b', stopB);
      await sleep(100);
      assert.deepEqual(led, ['a'], 'one leader while it leads');
      stopA.abort();
      await within(leadingA, 2_000, 'lead() to resolve once its signal aborts');
      assert.equal(a.election('boss').isLeader, false);
      while (led.length < 2) await sleep(10);
      assert.deepEqual(led, ['a', 'b']);
      assert.equal(b.election('boss').isLeader, true);
      stopB.abort();
      await within(leadingB, 2_000, 'the second lead() to resolve');
      assert.equal(b.election('boss').isLeader, false);
    });

    test('a lost term aborts fn and lead campaigns again; fn throwing while leader rejects', async () => {
      const { prefix, lhs } = await suite.instances(1_000);
      const lh = lhs[0]!;
      const stop = new AbortController();
      let terms = 0;
      const leading = lh.election('lost').lead(
        'x',
        async (term) => {
          terms += 1;
          if (terms === 1) await suite.command(['DEL', `${lockKey(prefix, 'lost')}:election`]);
          await new Promise((resolve) => term.signal.addEventListener('abort', resolve, { once: true }));
        },
        { signal: stop.signal },
      );
      while (terms < 2) await sleep(20);
      stop.abort();
      await within(leading, 3_000, 'lead() to end');
      await assert.rejects(
        lh.election('throws').lead('x', async () => {
          throw new Error('scheduler bug');
        }),
        /scheduler bug/,
      );
      assert.equal(lh.election('throws').isLeader, false);
    });
  });

  describe('lh.idempotent', () => {
    test('10 callers over 3 instances run fn once and all get its result; later callers too', async () => {
      const { lhs } = await suite.instances(2_000, 2_000, 2_000);
      let runs = 0;
      const calls = Array.from({ length: 10 }, (_, i) =>
        lhs[i % 3]!.idempotent('charge:1', async () => {
          runs += 1;
          await sleep(100);
          return { charged: 42, by: i };
        }),
      );
      const results = await Promise.all(calls);
      assert.equal(runs, 1);
      assert.equal(new Set(results.map((r) => JSON.stringify(r))).size, 1);
      assert.deepEqual(
        await lhs[1]!.idempotent('charge:1', async () => ({ charged: 0, by: -1 })),
        results[0],
      );
      assert.equal(runs, 1);
    });

    test('a fingerprint conflict is refused; fn throwing stores nothing; an unfinished run is an unknown outcome', async () => {
      const { prefix, lhs } = await suite.instances(2_000);
      const lh = lhs[0]!;
      assert.equal(await lh.idempotent('k', async () => 'first', { fingerprint: 'body-a' }), 'first');
      await assert.rejects(
        lh.idempotent('k', async () => 'other', { fingerprint: 'body-b' }),
        IdempotencyConflictError,
      );
      await assert.rejects(
        lh.idempotent('t', async () => Promise.reject(new Error('failed'))),
        /failed/,
      );
      assert.equal(await lh.idempotent('t', async () => 'ran again'), 'ran again');
      // The holder loses the lock mid-run (as a crash would): nothing may be stored.
      const lost = await lh.idempotent('u', async (lease) => {
        await suite.command(['DEL', lockKey(prefix, 'u')]);
        await new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
        return 'its own result';
      });
      assert.equal(lost, 'its own result');
      const unknown = await lh.idempotent('u', async () => 'twice').catch((error: unknown) => error);
      assert.ok(unknown instanceof OutcomeUnknownError, String(unknown));
      assert.ok(unknown.startedAt > 0 && unknown.fencingToken > 0n);
      assert.equal(await lh.idempotent('u', async () => 'on purpose', { retryUnknown: true }), 'on purpose');
    });

    test('bad input is a TypeError naming what was wrong', async () => {
      const { lhs } = await suite.instances(1_000);
      const lh = lhs[0]!;
      await assert.rejects(
        lh.idempotent('', async () => 1),
        /"key" must be/,
      );
      await assert.rejects(
        lh.idempotent('k', async () => 1, { keep: 0 }),
        /"keep" must be/,
      );
      await assert.rejects(
        lh.idempotent('k', async () => 1, { fingerprint: 'x'.repeat(2_000) }),
        /"fingerprint"/,
      );
      await assert.rejects(lh.idempotent('k', 'no' as unknown as () => number), /needs a function/);
    });
  });
}
