// lease.extend(longer ttl) racing an automatic renewal (found by review, reproduced here): the
// renewal, sent after the manual extension with the old ttl, runs last in Redis, so the key keeps
// the short TTL; but its reply confirmed validity with lease.ttl as read at reply time, the long
// one. The holder trusted its lease for ~30 s while Redis let the key expire after ~1 s, and
// another instance acquired while the first lease's signal had not aborted.
//
// CLIENT PAUSE holds both commands on the server so that they run in the order they were sent,
// after the reply of neither has arrived: the same interleaving network latency produces, on
// one Redis, on a quorum and on a Cluster.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConnectOptions, type Lease, Leasehold } from '../../src/index.ts';
import { RedisCluster } from '../harness/cluster.ts';
import {
  lockKey,
  mode,
  testDriver,
  testNotifications,
  tracking,
  uniquePrefix,
} from '../harness/leasehold.ts';
import { type Masters, startMasters } from '../harness/masters.ts';
import { command } from '../harness/resp.ts';

const TTL = 600;

/**
 * Holds a lease with `TTL`; just before its automatic renewal, pauses the servers that hold its
 * key and calls extend(30 s), so that the renewal (old ttl) runs after it. Then, for longer than
 * TTL, a second instance keeps trying: it must never get the lock while the lease is not lost.
 */
async function race(options: ConnectOptions, pausePorts: (key: string) => number[]): Promise<void> {
  const prefix = uniquePrefix('xr');
  const connect = () =>
    Leasehold.connect({ ...options, prefix, ttl: TTL, driver: testDriver, notifications: testNotifications });
  const [a, b] = await Promise.all([connect(), connect()]);
  try {
    const lease: Lease = await a.acquire('race');
    const key = lockKey(prefix, 'race');
    // renewAt is when the renewer sends the next extension (monotonic ms): pause just before it.
    await sleep(Math.max(0, lease.renewAt - performance.now() - 15));
    await Promise.all(pausePorts(key).map((port) => command(port, ['CLIENT', 'PAUSE', '60', 'WRITE'])));
    const renewed = once(a, 'extended');
    await lease.extend(30_000);
    await renewed;
    // The renewal ran last: Redis holds its (short) TTL, and the lease must not promise more.
    const pttls = await Promise.all(
      pausePorts(key).map(async (port) => Number(await command(port, ['PTTL', key]))),
    );
    const promised = lease.expiresAt - Date.now();
    assert.ok(
      promised <= Math.max(...pttls) + 20,
      `the lease promises ${promised} ms, Redis holds ${pttls} ms`,
    );
    for (const until = performance.now() + TTL * 2.5; performance.now() < until; ) {
      const other = await b.tryAcquire('race').catch(() => undefined);
      if (other !== undefined) {
        assert.ok(
          lease.signal.aborted,
          'another instance got the lock while the first lease still trusted itself',
        );
        await other.release();
        return;
      }
      await sleep(25);
    }
    assert.equal(lease.lost, false, 'the extended lease is still held');
    // The renewal after the race re-extended with the new ttl.
    const pttl = Number(await command(pausePorts(key)[0]!, ['PTTL', key]));
    assert.ok(pttl > TTL * 2, `the key carries the extended TTL (PTTL ${pttl})`);
    await lease.release();
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

describe(`extend() racing an automatic renewal (${mode})`, () => {
  describe('one Redis', () => {
    let masters: Masters;
    before(async () => {
      masters = await startMasters(1);
    });
    after(async () => {
      await masters.stopAll();
    });
    test('the renewal confirms the ttl it sent; nobody else gets in', async () => {
      await race({ url: masters.urls[0]! }, () => [masters.servers[0]!.port]);
    });
  });

  describe('quorum of 3 masters', () => {
    let masters: Masters;
    before(async () => {
      masters = await startMasters(3);
    });
    after(async () => {
      await masters.stopAll();
    });
    test('the renewal confirms the ttl it sent; nobody else gets in', async () => {
      await race({ nodes: [...masters.urls] }, () => masters.servers.map((s) => s.port));
    });
  });

  describe('Cluster', {
    skip: !tracking && 'the Cluster suites run in tracking mode only (see cluster.test.ts)',
  }, () => {
    let cluster: RedisCluster | undefined;
    before(async () => {
      cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
    });
    after(async () => {
      await cluster?.stop();
    });
    test('the renewal confirms the ttl it sent; nobody else gets in', async () => {
      const c = cluster!;
      await race({ cluster: { rootNodes: c.rootNodes.map(({ url }) => url) } }, (key) => [
        c.masterFor(key).server.port,
      ]);
    });
  });
});
