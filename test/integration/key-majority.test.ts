// The mutex and multiLock as a key majority on one Redis Cluster (cluster.keyMajority:
// rueidislock's KeyMajority): each name is 3 keys on 3 masters, and a lease lives while a
// majority of them holds it. One 3-master cluster (one replica each) for the file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lease, Leasehold, LockLostError } from '../../src/index.ts';
import { RedisCluster } from '../harness/cluster.ts';
import { aborted, mode, testDriver, tracking, uniquePrefix, within } from '../harness/leasehold.ts';
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

async function instance(
  prefix: string,
  ttl = 1_000,
  onDisconnect?: 'abort' | 'reverify',
): Promise<Leasehold> {
  const lh = await Leasehold.connect({
    cluster: { rootNodes: cluster.rootNodes.map(({ url }) => url), keyMajority: 3 },
    driver: testDriver,
    prefix,
    ttl,
    ...(onDisconnect === undefined ? {} : { onDisconnect }),
  });
  open.push(lh);
  return lh;
}

/** The replica keys of lock `name` as they are on the masters now: key -> [master port, value]. */
async function replicaKeys(prefix: string, name: string): Promise<Map<string, [number, unknown]>> {
  const found = new Map<string, [number, unknown]>();
  for (const master of cluster.masters) {
    const [, keys] = (await command(master.port, [
      'SCAN',
      '0',
      'MATCH',
      `${prefix}:{${name}#*}`,
      'COUNT',
      '1000',
    ])) as [unknown, string[]];
    for (const key of keys) found.set(key, [master.port, await command(master.port, ['GET', key])]);
  }
  return found;
}

describe(`key majority on Redis Cluster (${mode})`, { skip }, () => {
  test('a lease is 3 keys on 3 different masters, each holding the stored value', async () => {
    const prefix = uniquePrefix('km');
    const lh = await instance(prefix);
    for (const name of ['a', 'job:1', 'x#2']) {
      const lease = await lh.acquire(name);
      const keys = await replicaKeys(prefix, name);
      assert.equal(keys.size, 3, `3 replica keys of ${name}`);
      const masters = new Set([...keys.values()].map(([port]) => port));
      assert.equal(masters.size, 3, 'on 3 different masters');
      for (const [, value] of keys.values()) assert.equal(value, lease.stored);
      assert.equal(await lease.release(), true);
      assert.equal((await replicaKeys(prefix, name)).size, 0, 'released everywhere');
    }
  });

  test('one key lost (as a failover that lost the write would) keeps the lease and is put back', async () => {
    const prefix = uniquePrefix('km');
    const lh = await instance(prefix, 600);
    const lease = await lh.acquire('kept');
    const [key, [port]] = [...(await replicaKeys(prefix, 'kept')).entries()][0]!;
    await command(port, ['DEL', key]);
    // The push makes the holder re-verify at once: a majority still holds, and the missing key
    // is restored by the same round.
    await until(
      'the lost key to be put back',
      async () => (await command(port, ['GET', key])) === lease.stored,
      { timeout: 2_000, interval: 20 },
    );
    await sleep(700);
    assert.equal(lease.lost, false, 'the lease outlived one lost key and its own TTL');
    await lease.release();
  });

  test('a majority of keys taken over aborts the holder at once', async () => {
    const prefix = uniquePrefix('km');
    const lh = await instance(prefix, 6_000);
    const lease = await lh.acquire('taken');
    const keys = [...(await replicaKeys(prefix, 'taken')).entries()].slice(0, 2);
    for (const [key, [port]] of keys) await command(port, ['SET', key, 'someone-else', 'PX', '6000']);
    const reason = await within(aborted(lease.signal), 1_000, 'the holder notices the takeover');
    assert.ok(reason instanceof LockLostError);
  });

  test('a waiter in another instance wakes the moment the holder releases; fencing increases', async () => {
    const prefix = uniquePrefix('km');
    const [a, b] = await Promise.all([instance(prefix, 6_000), instance(prefix, 6_000)]);
    let last = 0n;
    for (const name of ['w1', 'w2', 'w3']) {
      const lease = await a.acquire(name);
      assert.ok(lease.fencingToken > last);
      const waiting = b.acquire(name, { timeout: 5_000 });
      await sleep(50);
      const releasedAt = performance.now();
      await lease.release();
      const next = await within(waiting, 1_000, 'the waiter acquires');
      // Far below the holder's 6 s TTL: only an invalidation push can have woken it.
      assert.ok(performance.now() - releasedAt < 500, 'woken by the push');
      assert.ok(next.fencingToken > lease.fencingToken, 'fencing tokens increase');
      last = next.fencingToken;
      await next.release();
    }
  });

  test('two instances never hold one name at once', async () => {
    const prefix = uniquePrefix('km');
    const lockers = await Promise.all([0, 1, 2].map(() => instance(prefix)));
    let inside = 0;
    let overlaps = 0;
    let sections = 0;
    await Promise.all(
      lockers.map(async (lh) => {
        for (let i = 0; i < 8; i++) {
          const lease = await lh.acquire('hot', { timeout: 10_000 });
          inside += 1;
          if (inside > 1) overlaps += 1;
          await sleep(1);
          inside -= 1;
          sections += 1;
          await lease.release();
        }
      }),
    );
    assert.equal(overlaps, 0);
    assert.equal(sections, 24);
  });

  test('a multiLock takes every name as a key majority, in order', async () => {
    const prefix = uniquePrefix('km');
    const lh = await instance(prefix, 6_000);
    const both = await lh.multiLock(['m1', 'm2']).acquire();
    for (const name of ['m1', 'm2']) {
      const keys = await replicaKeys(prefix, name);
      assert.equal(keys.size, 3);
      for (const [, value] of keys.values()) assert.equal(value, both.stored);
    }
    assert.equal(await lh.tryAcquire('m1'), undefined, 'the mutex and the multiLock exclude each other');
    await both.release();
  });

  // Last: it leaves the cluster with one master that has no replica.
  test('a master failover keeps every lease (one of its 3 keys was there) and its waiters', async () => {
    const prefix = uniquePrefix('km');
    // The default onDisconnect ('abort') gives up a lease only when a majority of its keys was
    // behind the dropped connection; one key is not a majority.
    // ttl 3 s, longer than the failover: from the moment the cluster marks the master failed
    // until its replica is promoted, every master refuses commands (CLUSTERDOWN, under the default
    // cluster-require-full-coverage yes), so no key can be extended and leases live on their
    // validity. With a 1.5 s ttl a loaded CI run lost f1 that way.
    const [holder, waiter] = await Promise.all([instance(prefix, 3_000), instance(prefix, 3_000)]);
    const leases: Lease[] = await Promise.all(['f1', 'f2', 'f3'].map((name) => holder.acquire(name)));
    const waiting = waiter.acquire('f1', { timeout: 20_000 });
    waiting.catch(() => {});
    await cluster.failover(cluster.masters[0]!);
    // Without a key majority the default onDisconnect ('abort') would have lost f1-f3 the moment
    // the master's connection dropped (cluster.test.ts shows it); here one key of three went.
    for (const lease of leases) {
      const reason = lease.lost ? String((lease.signal.reason as Error).message) : '';
      assert.equal(lease.lost, false, `${lease.name} survived the failover (${reason})`);
    }
    await leases[0]!.release();
    const next = await within(waiting, 5_000, 'the waiter acquires after the release');
    assert.ok(next.fencingToken > leases[0]!.fencingToken);
    await Promise.all([next.release(), leases[1]!.release(), leases[2]!.release()]);
  });
});
