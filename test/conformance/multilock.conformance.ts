// lh.multiLock() behaviour every topology must share: one Redis and the memory backend (one
// script), a Cluster with hash-tagged names (one script in one slot) and with names spread over
// slots (name by name, in sorted key order), and quorum mode over independent masters (name by
// name through the quorum). Run from conformance-redis, conformance-memory, multilock-topologies.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionClosedError,
  type ConnectOptions,
  Lease,
  type Leasehold,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
  MultiLease,
} from '../../src/index.ts';
import { aborted, lockKey, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import type { ConformanceTarget } from './mutex.conformance.ts';
import { usePool } from './suite.ts';

/** A store the suite can reach behind the library's back, as any topology lays it out. */
export interface MultiTarget {
  connect(options: ConnectOptions): Promise<Leasehold>;
  /** Deletes a key (on every node that may hold it). */
  del(key: string): Promise<void>;
  /** Sets a key with a TTL (on every node that may hold it): a foreign holder. */
  setWithTtl(key: string, value: string, ttl: number): Promise<void>;
  /** Whether the key exists (on any node; see quorumTarget for a give-back on its way). */
  exists(key: string): Promise<boolean>;
  close(): Promise<void>;
  /** The names this run uses for the letters a, b, c... (hash-tagged ones on a Cluster). */
  name(letter: string): string;
  /**
   * A name lives on several independent masters (a quorum): `del` reaches them one after another,
   * and an extension that runs between two DELs rightly restores the copy while a majority still
   * holds it, so a DEL is not a certain loss there (a takeover is: SET NX cannot restore it).
   */
  readonly replicated?: boolean;
}

/** A one-store target (one Redis, a MemoryBackend) as a MultiTarget. */
export function oneStore(target: ConformanceTarget): MultiTarget {
  return {
    connect: (options) => target.connect(options),
    del: (key) => target.del(key),
    setWithTtl: (key, value, ttl) => target.setWithTtl(key, value, ttl),
    exists: async (key) => Number(await target.command(['EXISTS', key])) === 1,
    close: () => target.close(),
    name: (letter) => letter,
  };
}

export function multiLockConformance(label: string, start: () => Promise<MultiTarget>): void {
  describe(`multiLock conformance: ${label}`, () => {
    const pool = usePool('multi', start);
    const instances = pool.many;
    const n = (letters: string): string[] => [...letters].map((letter) => pool.target().name(letter));
    const key = (prefix: string, letter: string) => lockKey(prefix, pool.target().name(letter));
    const held = async (prefix: string, letters: string) => {
      const out: string[] = [];
      for (const letter of letters) if (await pool.target().exists(key(prefix, letter))) out.push(letter);
      return out.join('');
    };

    test('a MultiLease: one fencing token per name, a Lease, release frees every name', async () => {
      const { prefix, lhs } = await instances(1);
      const [lh] = lhs as [Leasehold];
      const names = n('cab');
      const lease = await lh.multiLock(names).acquire();
      assert.ok(lease instanceof MultiLease && lease instanceof Lease);
      assert.deepEqual(lease.names, names);
      assert.equal(lease.name, names.join(','));
      assert.deepEqual([...lease.fencingTokens.keys()], names);
      const tokens = [...lease.fencingTokens.values()];
      for (const token of tokens) assert.equal(typeof token, 'bigint');
      const largest = [...tokens].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).at(-1);
      assert.equal(lease.fencingToken, largest, 'fencingToken is the largest of them');
      assert.ok(Buffer.from(lease.token, 'base64url').length >= 16);
      assert.equal(await held(prefix, 'abc'), 'abc');
      assert.equal(await lease.release(), true);
      assert.equal(await lease.release(), false, 'a second release has nothing to release');
      assert.ok(lease.signal.reason instanceof LockReleasedError);
      assert.equal(await held(prefix, 'abc'), '');
    });

    test('excludes plain mutex holders of its names and is excluded by them', async () => {
      const { prefix, lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const plain = await b.acquire(pool.target().name('b'));
      assert.equal(await a.multiLock(n('abc')).tryAcquire(), undefined);
      assert.equal(await held(prefix, 'ac'), '', 'all or none: nothing taken while b is held');
      await assert.rejects(a.multiLock(n('abc')).acquire({ timeout: 0 }), LockTimeoutError);
      await plain.release();
      const all = await a.multiLock(n('abc')).acquire({ timeout: 1_000 });
      for (const letter of 'abc') assert.equal(await b.tryAcquire(pool.target().name(letter)), undefined);
      assert.equal(await a.tryAcquire(pool.target().name('a')), undefined, 'also within one instance');
      const d = await b.tryAcquire(pool.target().name('d'));
      assert.ok(d !== undefined, 'a name outside the set is free');
      await Promise.all([all.release(), d.release()]);
    });

    test('all or none: a foreign holder of one name leaves no key behind', async () => {
      const { prefix, lhs } = await instances(1);
      await pool.target().setWithTtl(key(prefix, 'c'), 'foreign', 5_000);
      assert.equal(await lhs[0]!.multiLock(n('abcd')).tryAcquire(), undefined);
      assert.equal(await held(prefix, 'abcd'), 'c');
      await pool.target().del(key(prefix, 'c'));
    });

    test("fencing tokens strictly increase per name, from the mutex's own counters", async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const last = new Map<string, bigint>();
      const see = (name: string, token: bigint) => {
        assert.ok(token > (last.get(name) ?? 0n), `${name}: ${token} after ${last.get(name)}`);
        last.set(name, token);
      };
      for (let i = 0; i < 3; i++) {
        const plain = await b.acquire(pool.target().name('a'));
        see(pool.target().name('a'), plain.fencingToken);
        await plain.release();
        const multi = await a.multiLock(n(i % 2 === 0 ? 'ab' : 'ba')).acquire();
        for (const [name, token] of multi.fencingTokens) see(name, token);
        await multi.release();
      }
    });

    test('a waiter wakes the moment its last blocking name frees, in another instance and in its own', async () => {
      const { lhs } = await instances(2, 5_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      for (const holder of [b, a]) {
        const ha = await holder.acquire(pool.target().name('a'));
        const hc = await holder.multiLock(n('cd')).acquire();
        const waiting = a.multiLock(n('abc')).acquire({ timeout: 4_000 });
        let done = false;
        void waiting.then(() => {
          done = true;
        });
        await sleep(50);
        await ha.release();
        await sleep(100);
        assert.equal(done, false, 'c is still held');
        const releasedAt = performance.now();
        await hc.release();
        const all = await within(waiting, 3_000, 'the waiter acquires');
        // Far below the holder's 5 s TTL: only a push or a local wake can have woken it.
        assert.ok(performance.now() - releasedAt < 1_000, 'woken by the release');
        await all.release();
      }
    });

    test('no deadlock: callers asking for overlapping names in opposite orders all finish', async () => {
      // Three instances (other processes) with two callers each (waiters of one instance too).
      const { lhs } = await instances(3, 2_000);
      const sets = [n('abcd'), n('dcba'), n('bdx')];
      const inside = new Map<string, number>();
      let rounds = 0;
      const caller = async (lh: Leasehold, i: number) => {
        for (let round = 0; round < 12; round++) {
          for (const names of [sets[i % 3]!, sets[(i + 1) % 3]!]) {
            const lease = await lh.multiLock(names).acquire({ timeout: 15_000 });
            for (const name of names) {
              assert.equal(inside.get(name) ?? 0, 0, `${name} held twice`);
              inside.set(name, 1);
            }
            await new Promise((resolve) => setImmediate(resolve));
            for (const name of names) inside.set(name, 0);
            await lease.release();
            rounds += 1;
          }
        }
      };
      const callers = lhs.flatMap((lh, i) => [caller(lh, i), caller(lh, i + 1)]);
      await within(Promise.all(callers), 25_000, 'every caller finishes');
      assert.equal(rounds, 6 * 12 * 2);
    });

    test('losing one name (a DEL, a takeover) aborts the signal and gives the other names back', async () => {
      const { prefix, lhs } = await instances(2, 3_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      // How one name is lost, and which names are left for the library to give back.
      const lose: [() => Promise<unknown>, string][] = [
        // On a quorum the DEL case can rightly end with the lease kept (MultiTarget.replicated):
        // it failed a CI run that way once; the takeover below is certain everywhere.
        ...(pool.target().replicated
          ? []
          : [[() => pool.target().del(key(prefix, 'b')), 'abc'] as [() => Promise<unknown>, string]]),
        [() => b.forceAcquire(pool.target().name('c')), 'ab'],
      ];
      for (const [how, ours] of lose) {
        const lease = await a.multiLock(n('abc')).acquire({ timeout: 5_000 });
        const started = performance.now();
        await how();
        const reason = await within(aborted(lease.signal), 2_000, 'loss of one name');
        // With pushes the holder hears at once, not at its next extension (a third of 3 s).
        if (a.notifications === 'tracking') assert.ok(performance.now() - started < 500, 'heard by a push');
        assert.ok(reason instanceof LockLostError);
        assert.ok(lease.lost);
        const back = async () => (await held(prefix, ours)) === '';
        await until('the other names are given back', back, { timeout: 2_000, interval: 20 });
        assert.equal(await lease.release(), false);
        await pool.target().del(key(prefix, 'c'));
      }
    });

    test('automatic and manual extension keep every name; close() releases', async () => {
      // Three TTLs of 400 ms: at 200 ms a CI run on Bun (two test processes, a Cluster, two
      // cores) lost this lease once, the reason unrecorded; the assertion now says it.
      const { prefix, lhs } = await instances(2, 400);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const lease = await a.multiLock(n('ab')).acquire();
      await sleep(1_200);
      assert.equal(lease.lost, false, `lost: ${String(lease.signal.reason)}`);
      await lease.extend(2_000);
      assert.equal(await held(prefix, 'ab'), 'ab');
      const waiting = assert.rejects(a.multiLock(n('bc')).acquire(), ConnectionClosedError);
      await a.close();
      await waiting;
      assert.ok(lease.signal.reason instanceof LockReleasedError);
      const after = await b.multiLock(n('ab')).tryAcquire();
      assert.ok(after !== undefined, 'close() released every name');
      await after.release();
    });

    test('timeout, abort, and bad input (TypeError naming the option)', async () => {
      const { lhs } = await instances(2);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const plain = await b.acquire(pool.target().name('b'));
      await assert.rejects(a.multiLock(n('ab')).acquire({ timeout: 100 }), LockTimeoutError);
      const controller = new AbortController();
      const waiting = a.multiLock(n('ab')).acquire({ signal: controller.signal });
      controller.abort(new Error('stop'));
      await assert.rejects(waiting, /stop/);
      await plain.release();
      const bad: [unknown, RegExp][] = [
        [[], /"names" must be a non-empty array/],
        ['a', /"names" must be a non-empty array/],
        [['a', ''], /"names\[1\]" must be a non-empty string/],
        [['a', 7], /"names\[1\]"/],
        [['a', 'b', 'a'], /"names" must not repeat a name; received "a"/],
        [Array.from({ length: 65 }, (_, i) => `n${i}`), /at most 64 names; received 65/],
      ];
      for (const [names, message] of bad) {
        assert.throws(() => a.multiLock(names as string[]), { name: 'TypeError', message });
      }
      assert.throws(() => a.multiLock(['a'], { tll: 5 } as object), /unknown option "tll"/);
      await assert.rejects(a.multiLock(['a']).acquire({ ttl: -1 }), /"ttl"/);
    });
  });
}
