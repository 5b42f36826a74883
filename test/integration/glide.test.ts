// Valkey GLIDE as a client (issue 23 item 3): what differs from node-redis and ioredis. The whole
// integration suite also runs with LEASEHOLD_TEST_DRIVER=glide (polling); this file covers what
// only GLIDE has: why it polls, grants that still hand the lock over at once, a user's GlideClient
// and GlideClusterClient used as they are, and a stalled Redis that replaces our client.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { GLIDE_POLLS } from '../../src/driver/glide.ts';
import { Leasehold, NotificationsError, RedisUnavailableError } from '../../src/index.ts';
import { leasehold } from '../harness/cli.ts';
import { RedisCluster } from '../harness/cluster.ts';
import { aborted, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
// One environment is enough: this file drives GLIDE whatever LEASEHOLD_TEST_DRIVER says.
const skip =
  testDriver === 'glide' || testDriver === 'node-redis' ? false : 'runs in the glide and node-redis runs';

const open: Leasehold[] = [];
after(async () => {
  await Promise.all(open.map((lh) => lh.close()));
});
async function glide(options: Parameters<typeof Leasehold.connect>[0] = {}): Promise<Leasehold> {
  const lh = await Leasehold.connect({ url: redis.server.url, driver: 'glide', ...options });
  open.push(lh);
  return lh;
}
const address = (url: string) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
};
/** Until inspection lists a waiter of `name` (registered for a grant, or recorded), 5 s at most. */
async function listed(lh: Leasehold, name: string, what: string): Promise<void> {
  const waiting = async () => {
    while (((await lh.inspect(name))?.waiters?.length ?? 0) === 0) await new Promise((r) => setTimeout(r, 5));
  };
  await within(waiting(), 5_000, what);
}
async function clients(port: number): Promise<number> {
  return (
    String(await command(port, ['CLIENT', 'LIST']))
      .trim()
      .split('\n').length - 1
  );
}

describe('Valkey GLIDE', { skip }, () => {
  test("polls, saying why; notifications 'tracking' refuses to connect", async () => {
    const lh = await glide({ prefix: uniquePrefix('gl') });
    assert.equal(lh.notifications, 'polling');
    assert.equal(lh.stats.driver, 'glide');
    assert.equal(lh.stats.notificationsReason, GLIDE_POLLS);
    await assert.rejects(
      glide({ prefix: uniquePrefix('gl'), notifications: 'tracking' }),
      NotificationsError,
    );
  });

  test('a release grants the lock to a waiter at once, though waiters poll only every 30 s', async () => {
    const prefix = uniquePrefix('gl');
    const a = await glide({ prefix, retryDelay: 30_000 });
    const b = await glide({ prefix, retryDelay: 30_000 });
    const held = await a.acquire('payout');
    const waiting = b.acquire('payout', { timeout: 20_000 });
    // Registered for a grant: its second attempt (the first finds the lock held) is in the queue.
    await listed(b, 'payout', 'the waiter registered for a grant');
    const released = performance.now();
    await held.release();
    const lease = await within(waiting, 2_000, 'the granted waiter');
    assert.ok(performance.now() - released < 1_000, 'granted, not found by its next poll 30 s away');
    assert.ok(lease.fencingToken > held.fencingToken);
    await lease.release();
  });

  test("a user's GlideClient is used as it is: no connection of ours, left open on close()", async () => {
    const client = await GlideClient.createClient({
      addresses: [address(redis.server.url)],
      requestTimeout: 5_000,
    });
    try {
      const before = await clients(redis.server.port);
      const prefix = uniquePrefix('gl');
      const lh = await Leasehold.connect({ client, prefix });
      assert.equal(lh.stats.driver, 'glide');
      assert.equal(await clients(redis.server.port), before, 'leasehold opened no connection');
      const lease = await lh.acquire('report', { timeout: 2_000 });
      const other = await Leasehold.connect({ client, prefix, retryDelay: 20 });
      assert.equal(await other.tryAcquire('report'), undefined);
      const next = other.acquire('report', { timeout: 2_000 });
      await lease.release();
      await (await next).release();
      await other.close();
      await lh.close();
      assert.equal(await client.customCommand(['PING']), 'PONG', 'the client stays open');
    } finally {
      client.close();
    }
  });

  test('a Redis restarted empty: the holder loses its lease at once, before its next extension', async () => {
    const lh = await glide({ prefix: uniquePrefix('gl'), ttl: 30_000 });
    const lease = await lh.acquire('restart');
    const restarted = performance.now();
    await redis.server.restart();
    await within(aborted(lease.signal), 2_000, 'the holder hears of it from the Watch');
    assert.ok(performance.now() - restarted < 5_000, 'not at its extension, 10 s away');
    const next = await within(lh.acquire('restart', { timeout: 5_000 }), 6_000, 'usable again');
    await next.release();
  });

  test('an ACL without the Watch channel: connects, and goes on without grants', async () => {
    await command(redis.server.port, [
      'ACL',
      'SETUSER',
      'nowatch',
      'on',
      '>pw',
      'resetkeys',
      '~*',
      'resetchannels',
      '+@all',
    ]);
    const url = redis.server.url.replace('redis://', 'redis://nowatch:pw@');
    const prefix = uniquePrefix('gl');
    const lh = await Leasehold.connect({ url, driver: 'glide', prefix, retryDelay: 20 });
    const other = await Leasehold.connect({ url, driver: 'glide', prefix, retryDelay: 20 });
    open.push(lh, other);
    const held = await lh.acquire('job');
    const waiting = other.acquire('job', { timeout: 2_000 });
    // No grant subscription: the waiter is recorded for inspection instead of registered.
    await listed(lh, 'job', 'the waiter recorded');
    const channels = await command(redis.server.port, ['PUBSUB', 'CHANNELS', `${prefix}:grants:*`]);
    assert.deepEqual(channels, [], 'nobody subscribed to grants');
    await held.release();
    await (await waiting).release();
  });

  test('leasehold doctor --driver glide: polling, and why (exit 78)', async () => {
    const out = await leasehold(['doctor', '--redis', redis.server.url, '--driver', 'glide', '--json']);
    assert.equal(out.code, 78, out.stderr);
    const report = JSON.parse(out.stdout) as Record<string, unknown>;
    assert.equal(report['notifications'], 'polling');
    assert.equal(report['reason'], GLIDE_POLLS);
    assert.match(String(report['mode']), /^polling/);
  });

  test('a stalled Redis fails calls at commandTimeout; our client is replaced once it answers', async () => {
    const lh = await glide({ prefix: uniquePrefix('gl'), commandTimeout: 300 });
    const lease = await lh.acquire('stall', { ttl: 5_000 });
    redis.server.signal('SIGSTOP');
    try {
      const started = performance.now();
      await assert.rejects(lh.tryAcquire('other'), RedisUnavailableError);
      assert.ok(performance.now() - started < 2_000, 'bounded by commandTimeout, not by the outage');
    } finally {
      redis.server.signal('SIGCONT');
    }
    // The lease's connection was given up on: lost (onDisconnect 'abort').
    assert.equal(lease.lost, true);
    const next = await within(
      (async () => {
        for (;;) {
          const got = await lh.tryAcquire('after').catch(() => undefined);
          if (got !== undefined) return got;
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
      10_000,
      'a call on the replaced client',
    );
    await next.release();
  });
});

describe('Valkey GLIDE on Redis Cluster', { skip }, () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
  });
  after(async () => {
    await Promise.all(open.map((lh) => lh.close()));
    open.length = 0;
    await cluster?.stop();
  });

  test("a user's GlideClusterClient: names on every master, a multiLock in one slot, list() sees them all", async () => {
    const client = await GlideClusterClient.createClient({
      addresses: cluster.rootNodes.map(({ url }) => address(url)),
      requestTimeout: 5_000,
    });
    const prefix = uniquePrefix('glc');
    const lh = await Leasehold.connect({ client, prefix, retryDelay: 20 });
    try {
      const names = Array.from({ length: 12 }, (_, i) => `job-${i}`);
      const leases = await Promise.all(names.map((name) => lh.acquire(name, { timeout: 2_000 })));
      const masters = new Set(names.map((name) => cluster.masterFor(`${prefix}:{${name}}`).id));
      assert.ok(masters.size >= 2, 'the names spread over several masters');
      assert.deepEqual((await lh.list({ limit: 100 })).map((i) => i.name).sort(), [...names].sort());
      const both = await lh.multiLock(['{acct}:1', '{acct}:2']).acquire({ timeout: 2_000 });
      assert.equal(await lh.tryAcquire('{acct}:1'), undefined);
      await both.release();
      await Promise.all(leases.map((lease) => lease.release()));
    } finally {
      await lh.close();
      client.close();
    }
  });

  test('cluster: { rootNodes } with driver glide: grants on every master hand the lock over at once', async () => {
    const prefix = uniquePrefix('glr');
    const options = {
      cluster: { rootNodes: cluster.rootNodes.map(({ url }) => url) },
      driver: 'glide' as const,
      prefix,
    };
    const a = await Leasehold.connect({ ...options, retryDelay: 30_000 });
    const b = await Leasehold.connect({ ...options, retryDelay: 30_000 });
    open.push(a, b);
    assert.equal(b.notifications, 'polling');
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const held = await a.acquire(name);
      const waiting = b.acquire(name, { timeout: 20_000 });
      await listed(b, name, `${name}: the waiter registered`);
      await held.release();
      const lease = await within(waiting, 2_000, `${name}: granted`);
      await lease.release();
    }
  });
});
