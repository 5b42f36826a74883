// The mutex behind Redis Sentinel (one master, one replica, three sentinels): following a
// failover while leases are held and waiters wait, and `durability` (WAIT) with a live and with
// a dead replica. Two sentinel sets: the failover and the dead replica each use one up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ConnectOptions,
  DurabilityError,
  type Lease,
  Leasehold,
  LockLostError,
} from '../../src/index.ts';
import { aborted, lockKey, mode, testDriver, tracking, uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';
import { SentinelSet } from '../harness/sentinel.ts';

const skip = tracking
  ? false
  : 'the sentinel driver only follows the master and re-arms; polling mode is covered on one Redis';

let set: SentinelSet;
const sets: SentinelSet[] = [];
const open: Leasehold[] = [];

before(async () => {
  if (skip !== false) return;
  set = await SentinelSet.start();
  sets.push(set);
});
after(async () => {
  await Promise.all(open.map((lh) => lh.close()));
  await Promise.all(sets.map((s) => s.stop()));
});

async function instance(
  of: SentinelSet,
  prefix: string,
  ttl = 1_000,
  durability?: { replicas: number; timeout: number },
  options: ConnectOptions = {},
): Promise<Leasehold> {
  const lh = await Leasehold.connect({
    sentinel: { name: of.masterName, sentinels: of.sentinelUrls },
    driver: testDriver,
    prefix,
    ttl,
    ...(durability === undefined ? {} : { durability }),
    ...options,
  });
  open.push(lh);
  return lh;
}

describe(`mutex behind Redis Sentinel (${mode})`, { skip }, () => {
  test('a waiter wakes the moment the holder releases; an external DEL aborts the holder', async () => {
    const prefix = uniquePrefix('sn');
    const [a, b] = await Promise.all([instance(set, prefix, 6_000), instance(set, prefix, 6_000)]);
    const first = await a.acquire('wake');
    const waiting = b.acquire('wake', { timeout: 5_000 });
    await sleep(50);
    const releasedAt = performance.now();
    await first.release();
    const second = await within(waiting, 1_000, 'the waiter acquires');
    assert.ok(performance.now() - releasedAt < 500, 'woken by the push, not by the 6 s TTL');
    assert.ok(second.fencingToken > first.fencingToken);
    const master = await set.master();
    await command(master.port, ['DEL', lockKey(prefix, 'wake')]);
    const reason = await within(aborted(second.signal), 1_000, 'the holder notices the DEL');
    assert.ok(reason instanceof LockLostError);
  });

  test('durability with a live replica: the lock is on the replica before acquire() resolves', async () => {
    const prefix = uniquePrefix('sn');
    const lh = await instance(set, prefix, 5_000, { replicas: 1, timeout: 1_000 });
    const [, replica] = set.servers;
    const lease = await lh.acquire('durable');
    assert.equal(await command(replica!.port, ['GET', lockKey(prefix, 'durable')]), lease.stored);
    const forced = await lh.forceAcquire('durable');
    assert.equal(await command(replica!.port, ['GET', lockKey(prefix, 'durable')]), forced.stored);
    await forced.release();
    // Every primitive's acquisition goes through the same runner, WAIT included.
    const permit = await lh.semaphore('durable', { limit: 2 }).acquire();
    const members = await command(replica!.port, ['ZRANGE', `${prefix}:{durable}:sem`, '0', '-1']);
    assert.deepEqual(members, [`${permit.stored}:1`]);
    await permit.release();
    const writer = await lh.readWriteLock('durable').write();
    assert.equal(await command(replica!.port, ['GET', `${prefix}:{durable}:rw:writer`]), writer.stored);
    await writer.release();
    // A multiLock on one Redis takes every name in one script (multi-acquire.lua): one WAIT
    // after it covers them all.
    const both = await lh.multiLock(['durable-a', 'durable-b']).acquire();
    for (const name of ['durable-a', 'durable-b'])
      assert.equal(await command(replica!.port, ['GET', lockKey(prefix, name)]), both.stored, name);
    await both.release();
  });

  test('direct grants through the master: a release hands the lock to a registered waiter', async () => {
    const prefix = uniquePrefix('sn');
    const holder = await instance(set, prefix, 30_000);
    // Hears of nothing but grants: polling, attempting every 10 s (a served waiter was granted).
    const deaf = await instance(set, prefix, 10_000, undefined, {
      notifications: 'polling',
      retryDelay: 10_000,
    });
    const master = await set.master();
    const warm = await holder.acquire('warm');
    // Waits until Redis has the channel (below), not for a fixed time: the subscription opens with
    // an attempt after the first busy reply, which a short timeout could cut off.
    const warming = new AbortController();
    const warmWait = deaf.acquire('warm', { signal: warming.signal, timeout: 30_000 }).catch(() => undefined);
    await until(
      'the grant channel on the master',
      async () =>
        ((await command(master.port, ['PUBSUB', 'CHANNELS', `${prefix}:grants:*`])) as string[]).length > 0,
      { timeout: 10_000, interval: 10 },
    );
    warming.abort();
    await (await warmWait)?.release();
    await warm.release();
    const lease = await holder.acquire('granted');
    const waiting = deaf.acquire('granted', { timeout: 30_000 });
    const queue = `${lockKey(prefix, 'granted')}:waiters`;
    await until('the waiter registered', async () => (await command(master.port, ['ZCARD', queue])) === 1, {
      timeout: 5_000,
      interval: 10,
    });
    assert.equal((await holder.inspect('granted'))?.waiters?.length, 1, 'recorded, so inspect lists it');
    await lease.release();
    const next = await within(waiting, 1_000, 'the granted lease');
    assert.ok(next.fencingToken > lease.fencingToken);
    assert.equal(await command(master.port, ['GET', lockKey(prefix, 'granted')]), next.stored);
    await next.release();
  });

  // Uses the set up: the old master stays dead.
  test('a failover while leases are held and waiters wait', async (t) => {
    const prefix = uniquePrefix('sn');
    const ttl = 5_000;
    // 'reverify' keeps a lease through the failover when its validity outlasts it; the default
    // ('abort') gives up its leases the moment the master's connection drops.
    const [holder, waiter, aborting] = await Promise.all([
      instance(set, prefix, ttl, undefined, { onDisconnect: 'reverify' }),
      instance(set, prefix, ttl),
      instance(set, prefix, ttl),
    ]);
    const doomed = await aborting.acquire('f-abort');
    // Half of the leases outlive the failover (~2-3 s) on their validity, half cannot (1.5 s).
    const names = ['f0', 'f1', 'f2', 'f3', 'f4', 'f5'];
    const leases = await Promise.all(
      names.map((name, i) => holder.acquire(name, { ttl: i % 2 === 0 ? ttl : 1_500 })),
    );
    const waits = names.slice(0, 3).map((name) => waiter.acquire(name, { timeout: 25_000 }));
    for (const w of waits) w.catch(() => {});
    const start = performance.now();
    const resets: number[] = [];
    holder.on('reconnected', () => resets.push(performance.now() - start));

    const promoted = await set.failover();
    const promotedAt = performance.now() - start;
    const doomedReason = doomed.signal.reason as LockLostError | undefined;
    assert.equal(doomedReason?.reason, 'disconnected', "onDisconnect 'abort': the lease aborted at once");
    // Every lease either aborted or is still held on the new master: never held nowhere.
    const settledAt = await until(
      'every lease to be re-verified on the new master',
      async () => {
        for (const lease of leases) {
          if (lease.lost) continue;
          if ((await command(promoted.port, ['GET', lockKey(prefix, lease.name)])) !== lease.stored)
            return false;
        }
        return performance.now() - start;
      },
      { timeout: 5_000, interval: 20 },
    );
    await within(
      until('the holder to follow the new master', async () => resets.length > 0, { timeout: 5_000 }),
      6_000,
      'reset after failover',
    );
    await sleep(300);
    const survived: Lease[] = [];
    for (const lease of leases) {
      if (lease.lost) {
        assert.ok(lease.signal.reason instanceof LockLostError);
        continue;
      }
      assert.equal(await command(promoted.port, ['GET', lockKey(prefix, lease.name)]), lease.stored);
      survived.push(lease);
    }
    t.diagnostic(
      `sentinels agreed after ${Math.round(promotedAt)} ms; leases consistent at ${Math.round(settledAt)} ms; ` +
        `holder followed (reset) at ${Math.round(resets[0] ?? Number.NaN)} ms; ` +
        `${survived.length} of ${leases.length} leases survived, ${leases.length - survived.length} aborted`,
    );

    const releasedAt = performance.now();
    await Promise.all(survived.map((lease) => lease.release()));
    const acquired = await within(Promise.all(waits), 2 * ttl, 'the waiters acquire after the failover');
    for (const lease of acquired) {
      assert.equal(await command(promoted.port, ['GET', lockKey(prefix, lease.name)]), lease.stored);
      await lease.release();
    }
    t.diagnostic(`waiters acquired ${Math.round(performance.now() - releasedAt)} ms after the releases`);
  });

  test('a manual SENTINEL FAILOVER (the old master stays up and writable): holders follow the announcement', async (t) => {
    const graceful = await SentinelSet.start();
    sets.push(graceful);
    const prefix = uniquePrefix('sn');
    const [holder, waiter] = await Promise.all([
      instance(graceful, prefix, 4_000),
      instance(graceful, prefix, 4_000),
    ]);
    const leases = await Promise.all(['g0', 'g1', 'g2'].map((name) => holder.acquire(name)));
    const waiting = waiter.acquire('g0', { timeout: 20_000 });
    waiting.catch(() => {});
    const [oldMaster, replica] = graceful.servers;
    const start = performance.now();
    const resets: number[] = [];
    holder.on('reconnected', () => resets.push(performance.now() - start));
    await command(graceful.sentinels[0]!.port, ['SENTINEL', 'FAILOVER', graceful.masterName]);
    await until(
      'every sentinel to name the replica',
      async () => {
        for (let i = 0; i < 3; i++) if ((await graceful.masterPort(i)) !== replica!.port) return false;
        return true;
      },
      { timeout: 15_000, interval: 50 },
    );
    const agreedAt = performance.now() - start;
    // The old master keeps running, and stays writable until the sentinels demote it seconds
    // later: only their +switch-master announcement tells a client to move.
    await until('the holder to follow the new master', async () => resets.length > 0, { timeout: 5_000 });
    const followedAt = resets[0]!;
    for (const lease of leases) {
      await until(
        `${lease.name} to be held on the new master`,
        async () => (await command(replica!.port, ['GET', lockKey(prefix, lease.name)])) === lease.stored,
        { timeout: 5_000 },
      );
    }
    await sleep(1_500); // beyond a third of the TTL: extensions now run on the new master
    for (const lease of leases) assert.equal(lease.lost, false, `${lease.name} survived a graceful failover`);
    // Tracking is armed on the new master: a change there reaches the holder at once.
    const [, watched] = leases;
    await command(replica!.port, ['DEL', lockKey(prefix, watched!.name)]);
    assert.ok(
      (await within(aborted(watched!.signal), 1_000, 'the holder hears the new master')) instanceof
        LockLostError,
    );
    t.diagnostic(
      `sentinels agreed after ${Math.round(agreedAt)} ms; holder followed at ${Math.round(followedAt)} ms; ` +
        `old master still ${String(((await command(oldMaster!.port, ['ROLE'])) as unknown[])[0])}`,
    );
    await Promise.all(leases.map((lease) => lease.release()));
    const next = await within(waiting, 1_000, 'the waiter acquires on the new master');
    assert.equal(await command(replica!.port, ['GET', lockKey(prefix, 'g0')]), next.stored);
    await next.release();
  });

  test('durability with a dead replica fails the acquire with DurabilityError and leaves no key', async () => {
    const fresh = await SentinelSet.start();
    sets.push(fresh);
    const prefix = uniquePrefix('sn');
    const timeout = 200;
    const lh = await instance(fresh, prefix, 5_000, { replicas: 1, timeout });
    const ok = await lh.acquire('before');
    await ok.release();
    const [master, replica] = fresh.servers;
    await replica!.kill('SIGKILL');

    for (const attempt of [
      () => lh.acquire('dur', { timeout: 5_000 }),
      () => lh.tryAcquire('dur'),
      () => lh.forceAcquire('dur'),
    ]) {
      const started = performance.now();
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof DurabilityError, `DurabilityError expected, got ${String(error)}`);
      assert.equal(error.code, 'LEASEHOLD_ERR_DURABILITY');
      assert.equal(error.acknowledged, 0);
      assert.equal(error.required, 1);
      assert.ok(performance.now() - started >= timeout - 5, 'WAIT blocked for its timeout');
      assert.equal(await command(master!.port, ['EXISTS', lockKey(prefix, 'dur')]), 0, 'no key left behind');
    }
    // The other primitives' acquisitions wait and give back the same way.
    const others = [
      { run: () => lh.semaphore('dur', { limit: 1 }).tryAcquire(), key: `${prefix}:{dur}:sem` },
      { run: () => lh.fairLock('dur').acquire({ timeout: 5_000 }), key: `${prefix}:{dur}:fair` },
      { run: () => lh.readWriteLock('dur').tryWrite(), key: `${prefix}:{dur}:rw:writer` },
      { run: () => lh.election('dur').campaign('me', { timeout: 5_000 }), key: `${prefix}:{dur}:election` },
      // One script for both names (one Redis): the give-back after the failed WAIT frees both.
      { run: () => lh.multiLock(['dur', 'dur-2']).tryAcquire(), key: lockKey(prefix, 'dur-2') },
    ];
    for (const { run, key } of others) {
      const error = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof DurabilityError, `${key}: DurabilityError expected, got ${String(error)}`);
      assert.equal(await command(master!.port, ['EXISTS', key]), 0, `${key}: nothing left behind`);
    }
    assert.equal(lh.stats.held, 0);
    // Without durability the name is free at once: nothing was stranded.
    const plain = await instance(fresh, prefix);
    const lease = await plain.tryAcquire('dur');
    assert.ok(lease !== undefined);
    await lease.release();
  });
});
