// The mutex on a 3-master Redis Cluster (one replica each), and a master failover while leases
// are held and waiters wait. One cluster for the file: it takes ~2 s to form.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConnectOptions, type Lease, Leasehold, LockLostError } from '../../src/index.ts';
import { type ClusterNode, keySlot, RedisCluster } from '../harness/cluster.ts';
import { aborted, lockKey, mode, testDriver, tracking, uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const skip = tracking
  ? false
  : 'the cluster driver only routes commands and re-arms per master; polling mode is covered on one Redis';

let cluster: RedisCluster;
const open: Leasehold[] = [];

before(async () => {
  if (skip === false) cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 1 });
});
after(async () => {
  await Promise.all(open.map((lh) => lh.close()));
  await cluster?.stop();
});

async function instance(prefix: string, ttl = 1_000, options: ConnectOptions = {}): Promise<Leasehold> {
  const lh = await Leasehold.connect({
    cluster: { rootNodes: cluster.rootNodes.map(({ url }) => url) },
    driver: testDriver,
    prefix,
    ttl,
    ...options,
  });
  open.push(lh);
  return lh;
}

/** `count` lock names whose keys live on `master`. */
function namesOn(master: ClusterNode, prefix: string, count: number, label = 'n'): string[] {
  const names: string[] = [];
  for (let i = 0; names.length < count; i++) {
    if (cluster.masterFor(lockKey(prefix, `${label}${i}`)).id === master.id) names.push(`${label}${i}`);
  }
  return names;
}

/** How many times `lease` was extended (or re-verified) during the next `ms`. */
async function extensionsWithin(lh: Leasehold, lease: Lease, ms: number): Promise<number> {
  let count = 0;
  const onExtended = ({ name, fencingToken }: { name: string; fencingToken: bigint }) => {
    if (name === lease.name && fencingToken === lease.fencingToken) count += 1;
  };
  lh.on('extended', onExtended);
  await sleep(ms);
  lh.off('extended', onExtended);
  return count;
}

/** The value of a lock key on the master serving it now. */
async function held(prefix: string, name: string): Promise<unknown> {
  const key = lockKey(prefix, name);
  return command(cluster.masterFor(key).port, ['GET', key]);
}

describe(`mutex on Redis Cluster (${mode})`, { skip }, () => {
  test('own extensions do not notify the holder: NOLOOP on every master', async () => {
    const prefix = uniquePrefix('cl');
    const lh = await instance(prefix, 300);
    const leases = await Promise.all(
      cluster.masters.map((m) => lh.acquire(namesOn(m, prefix, 1, 'loop')[0]!)),
    );
    // Every ttl/3 = 100 ms: about 6 each in 600 ms. Without NOLOOP each extension's PEXPIRE would
    // push to its own connection and trigger the next re-verification at once: hundreds.
    const counts = await Promise.all(leases.map((lease) => extensionsWithin(lh, lease, 600)));
    for (const count of counts) assert.ok(count >= 3 && count <= 12, `${count} extensions in 600 ms`);
    await Promise.all(leases.map((lease) => lease.release()));
  });

  test('locks whose names land on different masters are each written to their own master', async () => {
    const prefix = uniquePrefix('cl');
    const lh = await instance(prefix);
    for (const master of cluster.masters) {
      const [name = ''] = namesOn(master, prefix, 1);
      const first = await lh.acquire(name);
      assert.equal(await command(master.port, ['GET', lockKey(prefix, name)]), first.stored);
      assert.equal(await first.release(), true);
      const second = await lh.acquire(name);
      assert.ok(second.fencingToken > first.fencingToken, 'fencing tokens increase');
      await second.release();
      assert.equal(await command(master.port, ['EXISTS', lockKey(prefix, name)]), 0);
    }
  });

  test('direct grants on every master: a release hands the lock to a registered waiter', async () => {
    const prefix = uniquePrefix('cl');
    const holder = await instance(prefix, 30_000);
    // Hears of nothing but grants: polling, attempting every 10 s (a served waiter was granted).
    const deaf = await instance(prefix, 10_000, { notifications: 'polling', retryDelay: 10_000 });
    // One subscription per master (PUBLISH counts only the node it runs on): each master has it.
    const warm = await holder.acquire('warm');
    // Waits until Redis has the channel (below), not for a fixed time: the subscription opens with
    // an attempt after the first busy reply, which a short timeout could cut off.
    const warming = new AbortController();
    const warmWait = deaf.acquire('warm', { signal: warming.signal, timeout: 30_000 }).catch(() => undefined);
    await until(
      'the grant channel on every master',
      async () => {
        for (const master of cluster.masters) {
          const channels = (await command(master.port, [
            'PUBSUB',
            'CHANNELS',
            `${prefix}:grants:*`,
          ])) as string[];
          if (channels.length === 0) return false;
        }
        return true;
      },
      { timeout: 10_000, interval: 10 },
    );
    warming.abort();
    await (await warmWait)?.release();
    await warm.release();
    for (const master of cluster.masters) {
      const [name = ''] = namesOn(master, prefix, 1, 'grant');
      const lease = await holder.acquire(name);
      const waiting = deaf.acquire(name, { timeout: 30_000 });
      const queue = `${lockKey(prefix, name)}:waiters`;
      await until('the waiter registered', async () => (await command(master.port, ['ZCARD', queue])) === 1, {
        timeout: 5_000,
        interval: 10,
      });
      // inspect lists it: registered waiters are recorded on a Cluster now.
      assert.equal((await holder.inspect(name))?.waiters?.length, 1);
      await lease.release();
      const next = await within(waiting, 1_000, 'the granted lease');
      assert.ok(next.fencingToken > lease.fencingToken);
      assert.equal(await held(prefix, name), next.stored);
      await next.release();
    }
  });

  test('a waiter in another instance wakes the moment the holder releases', async () => {
    const prefix = uniquePrefix('cl');
    const [a, b] = await Promise.all([instance(prefix, 6_000), instance(prefix, 6_000)]);
    for (const master of cluster.masters) {
      const [name = ''] = namesOn(master, prefix, 1, 'wake');
      const lease = await a.acquire(name);
      const waiting = b.acquire(name, { timeout: 5_000 });
      await sleep(50);
      const releasedAt = performance.now();
      await lease.release();
      const next = await within(waiting, 1_000, 'the waiter acquires');
      // Far below the holder's 6 s TTL: only the invalidation push can have woken it.
      assert.ok(performance.now() - releasedAt < 500, 'woken by the push');
      assert.ok(next.fencingToken > lease.fencingToken);
      await next.release();
    }
  });

  test('an external DEL on the master aborts the holder', async () => {
    const prefix = uniquePrefix('cl');
    const lh = await instance(prefix, 6_000);
    const leases = await Promise.all(
      cluster.masters.map((m) => lh.acquire(namesOn(m, prefix, 1, 'del')[0]!)),
    );
    for (const lease of leases) {
      const key = lockKey(prefix, lease.name);
      await command(cluster.masterFor(key).port, ['DEL', key]);
      const reason = await within(aborted(lease.signal), 1_000, 'the holder notices the DEL');
      assert.ok(reason instanceof LockLostError);
    }
  });

  test('forceAcquire from another instance aborts the previous holder; fencing increases', async () => {
    const prefix = uniquePrefix('cl');
    const [a, b] = await Promise.all([instance(prefix, 6_000), instance(prefix)]);
    for (const master of cluster.masters) {
      const [name = ''] = namesOn(master, prefix, 1, 'force');
      const first = await a.acquire(name);
      const second = await b.forceAcquire(name);
      const reason = await within(aborted(first.signal), 1_000, 'the holder notices the takeover');
      assert.ok(reason instanceof LockLostError);
      assert.ok(second.fencingToken > first.fencingToken);
      assert.equal(await held(prefix, name), second.stored);
      await second.release();
    }
  });

  test('FLUSHALL on one master aborts only the holders on that master', async () => {
    const prefix = uniquePrefix('cl');
    const lh = await instance(prefix, 6_000);
    const [flushed, other] = cluster.masters;
    const onFlushed = await lh.acquire(namesOn(flushed!, prefix, 1, 'flush')[0]!);
    const onOther = await lh.acquire(namesOn(other!, prefix, 1, 'flush')[0]!);
    await command(flushed!.port, ['FLUSHALL']);
    const reason = await within(aborted(onFlushed.signal), 1_000, 'the holder notices the flush');
    assert.ok(reason instanceof LockLostError);
    await sleep(100);
    assert.equal(onOther.lost, false, 'a flush elsewhere re-checks, it does not abort');
    assert.equal(await held(prefix, onOther.name), onOther.stored);
    await onOther.release();
  });

  test('lockers on names across all masters never overlap and all get through', async () => {
    const prefix = uniquePrefix('cl');
    const lockers = await Promise.all([0, 1, 2].map(() => instance(prefix)));
    const names = cluster.masters.map((m) => namesOn(m, prefix, 1, 'hot')[0]!);
    const inside = new Map<string, number>();
    let overlaps = 0;
    let sections = 0;
    await Promise.all(
      lockers.flatMap((lh) =>
        names.map(async (name) => {
          let last = 0n;
          for (let i = 0; i < 8; i++) {
            const lease = await lh.acquire(name, { timeout: 10_000 });
            assert.ok(lease.fencingToken > last);
            last = lease.fencingToken;
            inside.set(name, (inside.get(name) ?? 0) + 1);
            if (inside.get(name)! > 1) overlaps += 1;
            await sleep(1);
            inside.set(name, inside.get(name)! - 1);
            sections += 1;
            await lease.release();
          }
        }),
      ),
    );
    assert.equal(overlaps, 0);
    assert.equal(sections, 3 * 3 * 8);
  });

  test("resharding a held lock's slot (MIGRATING / ASK / MOVED) keeps the lease and wakes the waiter", async () => {
    const prefix = uniquePrefix('cl');
    const [holder, waiter] = await Promise.all([instance(prefix, 900), instance(prefix, 900)]);
    const [source, target] = cluster.masters;
    const [name = ''] = namesOn(source!, prefix, 1, 'move');
    const key = lockKey(prefix, name);
    const lease = await holder.acquire(name);
    const waiting = waiter.acquire(name, { timeout: 10_000 });
    await sleep(50);
    const slot = keySlot(key);
    await command(target!.port, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', source!.id]);
    await command(source!.port, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', target!.id]);
    // Moving the keys deletes them on the source: both instances hear of it and re-check through
    // ASK on the target; then the slot is handed over and the next command meets MOVED. Every key
    // of the slot moves, as `redis-cli --cluster reshard` moves them: the lock, its counter, and
    // the waiter's registration for a direct grant (its queue and record).
    const keys = (await command(source!.port, ['CLUSTER', 'GETKEYSINSLOT', slot, 100])) as string[];
    assert.ok(keys.includes(key) && keys.includes(`${key}:fence`), keys.join(', '));
    const moved = await command(source!.port, [
      'MIGRATE',
      '127.0.0.1',
      target!.port,
      '',
      0,
      5_000,
      'KEYS',
      ...keys,
    ]);
    assert.equal(moved, 'OK');
    await sleep(200);
    for (const master of cluster.masters) {
      await command(master.port, ['CLUSTER', 'SETSLOT', slot, 'NODE', target!.id]);
    }
    await cluster.refresh();
    assert.equal(cluster.masterFor(key).id, target!.id);
    // Through two extensions (ttl 900 ms): the lease follows its key.
    await sleep(700);
    assert.equal(lease.lost, false, 'the lease survived the move');
    assert.equal(await command(target!.port, ['GET', key]), lease.stored);
    const releasedAt = performance.now();
    assert.equal(await lease.release(), true);
    const next = await within(waiting, 1_000, 'the waiter acquires on the new master');
    assert.ok(performance.now() - releasedAt < 500, 'woken by the push from the new master');
    assert.ok(next.fencingToken > lease.fencingToken, 'the fencing counter moved with the lock');
    assert.equal(await command(target!.port, ['GET', key]), next.stored);
    await next.release();
  });

  // Last: it leaves the cluster with one master that has no replica.
  test('a master failover while leases are held and waiters wait', async (t) => {
    const prefix = uniquePrefix('cl');
    const ttl = 5_000;
    // 'reverify' keeps a lease through the failover when its validity outlasts it; the default
    // ('abort') gives up every lease of the failed master the moment its connection drops.
    const [holder, waiter, aborting] = await Promise.all([
      instance(prefix, ttl, { onDisconnect: 'reverify' }),
      instance(prefix, ttl),
      instance(prefix, ttl),
    ]);
    // Half of the leases outlive the failover (~3 s) on their validity, half cannot (1.5 s).
    const ttlOf = (i: number) => (i % 2 === 0 ? ttl : 1_500);
    const victim = cluster.masters[0]!;
    const bystander = cluster.masters[1]!;
    const names = namesOn(victim, prefix, 6, 'fo');
    const leases = await Promise.all(names.map((name, i) => holder.acquire(name, { ttl: ttlOf(i) })));
    const doomed = await aborting.acquire(namesOn(victim, prefix, 1, 'fo-abort')[0]!);
    const bystanding = await aborting.acquire(namesOn(bystander, prefix, 1, 'fo-abort-safe')[0]!);
    const safe = await holder.acquire(namesOn(bystander, prefix, 1, 'fo-safe')[0]!);
    const waits = names.slice(0, 3).map((name) => waiter.acquire(name, { timeout: 25_000 }));
    for (const w of waits) w.catch(() => {});
    const resets: number[] = [];
    const start = performance.now();
    holder.on('reconnected', () => resets.push(performance.now() - start));
    await sleep(50);

    const promoted = await cluster.failover(victim);
    const promotedAt = performance.now() - start;
    const doomedReason = doomed.signal.reason as LockLostError | undefined;
    assert.equal(
      doomedReason?.reason,
      'disconnected',
      "onDisconnect 'abort': the failed master's lease aborted",
    );
    assert.equal(bystanding.lost, false, "onDisconnect 'abort': a lease on a healthy master is kept");
    await bystanding.release();
    // Every lease either aborted or is still held *on the new master*: never held nowhere.
    const settledAt = await until(
      'every lease of the failed master to be re-verified',
      async () => {
        for (const lease of leases) {
          if (lease.lost) continue;
          const value = await command(promoted.port, ['GET', lockKey(prefix, lease.name)]);
          if (value !== lease.stored) return false;
        }
        return performance.now() - start;
      },
      { timeout: 5_000, interval: 20 },
    );
    await sleep(300);
    const survived: Lease[] = [];
    for (const lease of leases) {
      if (lease.lost) continue;
      assert.equal(await command(promoted.port, ['GET', lockKey(prefix, lease.name)]), lease.stored);
      survived.push(lease);
    }
    assert.equal(safe.lost, false, 'a lease on a master that stayed up survives');
    t.diagnostic(
      `promoted after ${Math.round(promotedAt)} ms; leases consistent at ${Math.round(settledAt)} ms; ` +
        `first reset at ${Math.round(resets[0] ?? Number.NaN)} ms; ` +
        `${survived.length} of ${leases.length} leases survived, ${leases.length - survived.length} aborted`,
    );

    // Waiters still acquire once the holders let go, on the new master.
    const releasedAt = performance.now();
    await Promise.all([...survived, safe].map((lease) => lease.release().catch(() => false)));
    const acquired = await within(Promise.all(waits), 2 * ttl, 'the waiters acquire after the failover');
    for (const lease of acquired) {
      assert.equal(await command(promoted.port, ['GET', lockKey(prefix, lease.name)]), lease.stored);
      await lease.release();
    }
    t.diagnostic(`waiters acquired ${Math.round(performance.now() - releasedAt)} ms after the releases`);
    // New locks on the failed-over slots work as usual, and the new master's connection tracks
    // with NOLOOP too: a lease's own extensions do not notify it (that would re-verify in a loop).
    const fresh = await holder.acquire(
      namesOn(cluster.masterFor(lockKey(prefix, names[0]!)), prefix, 1, 'new')[0]!,
      { ttl: 300 },
    );
    assert.equal(await held(prefix, fresh.name), fresh.stored);
    assert.ok((await extensionsWithin(holder, fresh, 600)) <= 12, 'no self-notification loop');
    await fresh.release();
  });
});
