// The mutex behaviour every backend must share. Run against Redis (test/integration/
// conformance-redis.test.ts) and against the in-memory backend (test/unit/conformance-memory.test.ts),
// so that the two cannot drift apart.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import {
  ConnectionClosedError,
  type ConnectOptions,
  type Leasehold,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
} from '../../src/index.ts';
import { aborted, lockKey, within } from '../harness/leasehold.ts';
import { usePool } from './suite.ts';

/** One store (a Redis, a MemoryBackend) and the ways to reach it. */
export interface ConformanceTarget {
  /** A new instance on this store (the options carry a prefix and a ttl). */
  connect(options: ConnectOptions): Promise<Leasehold>;
  /** Deletes a key behind the library's back, as another program would. */
  del(key: string): Promise<void>;
  /** Sets a key with a TTL behind the library's back (a foreign or crashed holder). */
  setWithTtl(key: string, value: string, ttl: number): Promise<void>;
  /** Sends one command to the store behind the library's back (the primitives' suites use it). */
  command(args: (string | number)[]): Promise<unknown>;
  /** Stops whatever the target started. */
  close(): Promise<void>;
}

export function mutexConformance(label: string, start: () => Promise<ConformanceTarget>): void {
  describe(`mutex conformance: ${label}`, () => {
    const pool = usePool('conf', start);
    const instances = pool.many;

    test('a lease has a name, a 128-bit token and a fencing token; release is idempotent', async () => {
      const { lhs } = await instances(1);
      const [lh] = lhs as [Leasehold];
      const lease = await lh.acquire('job');
      assert.equal(lease.name, 'job');
      assert.ok(Buffer.from(lease.token, 'base64url').length >= 16);
      assert.equal(typeof lease.fencingToken, 'bigint');
      assert.ok(lease.expiresAt > Date.now());
      assert.equal(lease.signal.aborted, false);
      assert.equal(await lease.release(), true);
      assert.equal(await lease.release(), false, 'a second release has nothing to release');
      assert.ok(lease.signal.reason instanceof LockReleasedError);
      assert.equal(lease.lost, false);
    });

    test('tryAcquire: undefined while another instance holds the lock, a lease after release', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.acquire('job');
      assert.equal(await b.tryAcquire('job'), undefined);
      await assert.rejects(b.acquire('job', { timeout: 0 }), LockTimeoutError);
      await held.release();
      const mine = await b.tryAcquire('job');
      assert.ok(mine !== undefined);
      await mine.release();
    });

    test('fencing tokens strictly increase across instances and takeovers', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const tokens: bigint[] = [];
      for (let i = 0; i < 3; i++) {
        for (const lh of [a, b]) {
          const lease = await lh.acquire('job');
          tokens.push(lease.fencingToken);
          await lease.release();
        }
      }
      tokens.push((await a.forceAcquire('job')).fencingToken);
      tokens.push((await b.forceAcquire('job')).fencingToken);
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
    });

    test('a waiter in another instance gets the lock as soon as it is released', async () => {
      const { lhs } = await instances(2, 5_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.acquire('job');
      const waiting = b.acquire('job', { timeout: 4_000 });
      await new Promise((resolve) => setImmediate(resolve));
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      assert.ok(performance.now() - releasedAt < 1_000, 'woken by the release, not the 5 s TTL');
      assert.ok(next.fencingToken > held.fencingToken);
      await next.release();
    });

    test('only one holder at a time under contention', async () => {
      const { lhs } = await instances(3);
      let inside = 0;
      let most = 0;
      await Promise.all(
        lhs.map(async (lh) => {
          for (let i = 0; i < 10; i++) {
            await lh.withLock(
              'hot',
              async () => {
                inside += 1;
                most = Math.max(most, inside);
                await new Promise((resolve) => setImmediate(resolve));
                inside -= 1;
              },
              { timeout: 10_000 },
            );
          }
        }),
      );
      assert.equal(most, 1);
    });

    test("forceAcquire takes over; the previous holder's signal aborts with LockLostError", async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const first = await a.acquire('job');
      const taken = await b.forceAcquire('job');
      const reason = await within(aborted(first.signal), 1_000, 'loss after a takeover');
      assert.ok(reason instanceof LockLostError);
      assert.ok(first.lost);
      assert.equal(await first.release(), false);
      assert.equal(await taken.release(), true);
    });

    test('a key deleted behind its back aborts the holder', async () => {
      const { prefix, lhs } = await instances(1, 600);
      const lease = await lhs[0]!.acquire('job');
      await pool.target().del(lockKey(prefix, 'job'));
      const reason = await within(aborted(lease.signal), 1_000, 'loss after an external delete');
      assert.ok(reason instanceof LockLostError);
    });

    test('a crashed holder costs a waiter its remaining TTL, no more', async () => {
      const { prefix, lhs } = await instances(1);
      await pool.target().setWithTtl(lockKey(prefix, 'job'), 'crashed-holder', 200);
      const started = performance.now();
      const lease = await within(lhs[0]!.acquire('job'), 2_000, 'acquire after the TTL');
      const waited = performance.now() - started;
      assert.ok(waited >= 150 && waited < 1_000, `waited ${Math.round(waited)} ms`);
      await lease.release();
    });

    test('timeout rejects with LockTimeoutError; an aborted signal rejects with its reason', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.acquire('job');
      await assert.rejects(b.acquire('job', { timeout: 100 }), LockTimeoutError);
      const controller = new AbortController();
      const waiting = b.acquire('job', { signal: controller.signal });
      controller.abort(new Error('stop'));
      await assert.rejects(waiting, /stop/);
      await held.release();
    });

    test('automatic extension keeps a lease past its TTL', async () => {
      const { lhs } = await instances(1, 150);
      const [lh] = lhs as [Leasehold];
      const lease = await lh.acquire('job');
      for (let i = 0; i < 4; i++) await within(once(lh, 'extended'), 1_000, 'an extension');
      assert.equal(lease.lost, false);
      assert.equal(await lease.release(), true);
    });

    test('withLock releases also when the function throws; asyncDispose releases', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      await assert.rejects(
        a.withLock('job', () => {
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await a.withLock('job', () => 42), 42);
      {
        await using held = await a.acquire('job');
        assert.equal(await b.tryAcquire('job'), undefined);
        assert.equal(held.lost, false);
      }
      const after = await b.tryAcquire('job');
      assert.ok(after !== undefined);
      await after.release();
    });

    test('close() ends held leases (LockReleasedError) and rejects waiters (ConnectionClosedError)', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const held = await a.acquire('job');
      const other = await b.acquire('other');
      const waiting = assert.rejects(a.acquire('other'), ConnectionClosedError);
      await a.close();
      assert.ok(held.signal.reason instanceof LockReleasedError);
      await waiting;
      await assert.rejects(a.acquire('job'), ConnectionClosedError);
      const free = await b.tryAcquire('job');
      assert.ok(free !== undefined, 'close() released the lock');
      await Promise.all([free.release(), other.release()]);
    });
  });
}
