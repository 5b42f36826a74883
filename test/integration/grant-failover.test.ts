// Issue 39, item 4: with a plain `url` in front of a failover endpoint (a managed service's primary
// address, a virtual IP, a TCP proxy), can a grant whose write the old master then lost
// (asynchronous replication) be taken as a lease? Yes, as the reply of any acquisition that
// master acknowledged can (docs/safety.md, the failover row); docs/direct-grants.md, "Behind a
// failover endpoint", says why a confirming round trip would not change that and what bounds it.
// This file shows what follows, against real servers: a master, a replica fed through a proxy that
// drops the replication stream (the write never reaches it), and the endpoint moved to the
// promoted replica:
// - the grant is taken as a lease (the waiter's acquire resolves);
// - the promoted replica has the old holder's key, since its release was lost with the grant, so
//   nobody else gets the name until that key's TTL runs out;
// - the grantee is told before then: at the disconnect (onDisconnect 'abort', the default), or
//   when it reconnects and finds another server behind the address ('reverify': the run_id
//   changed, which ends every lease of the instance, granted or not).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type Lease, Leasehold, LockLostError } from '../../src/index.ts';
import { aborted, lockKey, mode, testDriver, tracking, uniquePrefix, within } from '../harness/leasehold.ts';
import { startServer } from '../harness/masters.ts';
import { until } from '../harness/poll.ts';
import { FaultProxy } from '../harness/proxy.ts';
import type { RedisServer } from '../harness/redis-server.ts';
import { command, info } from '../harness/resp.ts';
import { grantRecords } from '../harness/strands.ts';

const TTL = 4_000;
const open: { stop(): Promise<void> }[] = [];
after(async () => {
  for (const item of open.reverse()) await item.stop().catch(() => {});
});

/** A master, its replica behind `link` (the replication stream), and `endpoint` in front of the master. */
async function failoverPair(): Promise<{
  master: RedisServer;
  replica: RedisServer;
  link: FaultProxy;
  endpoint: FaultProxy;
}> {
  const master = await startServer({ args: ['--repl-diskless-sync-delay', '0'] });
  open.push(master);
  const link = await FaultProxy.start(master.port);
  open.push(link);
  const replica = await startServer({
    args: ['--repl-diskless-sync-delay', '0', '--replicaof', '127.0.0.1', String(link.port)],
  });
  open.push(replica);
  await until(
    'the replica to sync',
    async () => (await info(replica.port, 'replication'))['master_link_status'] === 'up',
    { timeout: 20_000 },
  );
  const endpoint = await FaultProxy.start(master.port);
  open.push(endpoint);
  return { master, replica, link, endpoint };
}

const skip = tracking ? false : 'waiters in polling mode register for no grant (docs/direct-grants.md)';

describe(`a grant whose write a failover lost (plain url, ${mode})`, { skip }, () => {
  for (const onDisconnect of ['abort', 'reverify'] as const) {
    test(`taken as a lease, then ended before anyone else can take the name (onDisconnect ${onDisconnect})`, async () => {
      const { master, replica, link, endpoint } = await failoverPair();
      const prefix = uniquePrefix('grant-failover');
      const options = { url: endpoint.url, driver: testDriver, prefix, ttl: TTL };
      const holder = await Leasehold.connect({ ...options, owner: 'holder' });
      const waiter = await Leasehold.connect({ ...options, owner: 'waiter', onDisconnect });
      open.push({ stop: () => holder.close() }, { stop: () => waiter.close() });
      const key = lockKey(prefix, 'job');

      const held = await holder.acquire('job');
      await until(
        'the holder key on the replica',
        async () => (await command(replica.port, ['EXISTS', key])) === 1,
        {
          timeout: 5_000,
          interval: 10,
        },
      );
      const waiting = waiter.acquire('job', { timeout: 10_000 });
      await until(
        "the waiter's grant registration",
        async () => (await command(master.port, ['HLEN', grantRecords(prefix, 'mutex', 'job')])) === 1,
        { timeout: 5_000, interval: 5 },
      );
      // From here the replica gets nothing: the release and its grant stay on the master.
      link.blackhole(true);
      assert.equal(await held.release(), true);
      const lease: Lease = await within(waiting, 2_000, 'the grant');
      const onMaster = await command(master.port, ['GET', key]);
      const onReplica = await command(replica.port, ['GET', key]);
      assert.notEqual(onReplica, null, 'the replica still has the old holder key');
      assert.notEqual(onMaster, onReplica, "the grant is the master's alone");

      // The failover: the master dies, the replica is promoted, the endpoint moves to it.
      await master.kill('SIGKILL');
      await command(replica.port, ['REPLICAOF', 'NO', 'ONE']);
      const failedOver = performance.now();
      endpoint.retarget(replica.port);

      const reason = await within(aborted(lease.signal), 5_000, "the grantee's loss");
      const toldAfter = performance.now() - failedOver;
      assert.ok(reason instanceof LockLostError, `told with a LockLostError: ${String(reason)}`);
      assert.equal(lease.lost, true);
      // Told while the old holder's key still keeps everyone else out on the new master.
      const left = Number(await command(replica.port, ['PTTL', key]));
      assert.ok(left > 0, `the old holder's key still stands when the grantee is told (${left} ms left)`);
      // A process that connects after the failover finds the name taken.
      const other = await Leasehold.connect({ ...options, owner: 'other' });
      open.push({ stop: () => other.close() });
      assert.equal(await other.tryAcquire('job'), undefined, 'nobody else has the name meanwhile');
      assert.ok(toldAfter < TTL / 2, `told ${toldAfter.toFixed(0)} ms after the failover`);
    });
  }
});
