// Notifications are verified, not assumed: a canary proves on connect and after every reconnect
// that an invalidation for a key read inside a script arrives. When it cannot (an ACL without
// client|tracking, a proxy that drops pushes), 'auto' falls back to polling and says so once;
// 'tracking' refuses to connect. The waiter tests below fail without the fallback: a waiter in
// tracking mode sleeps until the holder's TTL, waiting for a push that never comes.
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import { once } from 'node:events';
import { after, describe, test } from 'node:test';
import { CHANNELS } from '../../src/diagnostics.ts';
import { type Leasehold, type LeaseholdEvents, NotificationsError } from '../../src/index.ts';
import { addUserWithoutTracking } from '../harness/acl.ts';
import { connect, mode, testDriver, tracking, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { command } from '../harness/resp.ts';
import { redisServerVersion } from '../harness/server-binary.ts';

const redis = useRedis({ prepare: (server) => addUserWithoutTracking(server.port) });

type Change = LeaseholdEvents['notifications'];

/** Connects in `notifications` mode and records every 'notifications' event from the start. */
async function open(
  url: string,
  notifications: 'auto' | 'tracking',
  prefix = uniquePrefix('nt'),
): Promise<{ lh: Leasehold; changes: Change[]; channel: unknown[] }> {
  const channel: unknown[] = [];
  const onMessage = (message: unknown) => channel.push(message);
  diagnosticsChannel.subscribe(CHANNELS.notifications, onMessage);
  const lh = await connect(redis.server, { url, notifications, prefix, retryDelay: 50 });
  const changes: Change[] = [];
  lh.on('notifications', (change) => changes.push(change));
  after(() => diagnosticsChannel.unsubscribe(CHANNELS.notifications, onMessage));
  return { lh, changes, channel };
}

/**
 * A holder in another (tracking) instance keeps the lock with a long TTL and releases it after
 * 200 ms; the waiter must get it long before that TTL. Only a push or polling can wake it.
 */
async function waiterWakes(waiter: Leasehold, prefix: string): Promise<void> {
  const holder = await connect(redis.server, { prefix, ttl: 20_000 });
  try {
    const lease = await holder.acquire('job');
    const waiting = waiter.acquire('job', { timeout: 5_000, ttl: 1_000 });
    setTimeout(() => void lease.release(), 200).unref();
    const got = await within(waiting, 5_000, 'waiter acquires after the release');
    await got.release();
  } finally {
    await holder.close();
  }
}

const expectedRule = () => {
  const [product, version = ''] = redisServerVersion().split(' ');
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return product === 'Valkey' || major > 7 || (major === 7 && minor >= 2) ? 'read-keys' : 'declared-keys';
};

describe(`notifications are proven by a canary (${mode})`, {
  skip: !tracking && 'polling mode proves nothing',
}, () => {
  test('a direct connection proves its pushes and reports the server tracking rule', async () => {
    const { lh, changes } = await open(redis.server.url, 'auto');
    assert.equal(lh.notifications, 'tracking');
    assert.equal(lh.stats.notifications, 'tracking');
    assert.equal(lh.stats.driver, testDriver);
    assert.equal(lh.stats.trackingRule, expectedRule());
    assert.equal(lh.stats.notificationsReason, undefined);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(changes, [], 'no event while pushes work');
    await lh.close();
  });

  test("an ACL without client|tracking: 'auto' polls, says so once, and a waiter still wakes", async () => {
    const url = `redis://notrack:secret@127.0.0.1:${redis.server.port}`;
    const prefix = uniquePrefix('acl');
    const { lh, changes, channel } = await open(url, 'auto', prefix);
    assert.equal(lh.notifications, 'polling');
    assert.equal(lh.stats.notifications, 'polling');
    assert.match(lh.stats.notificationsReason ?? '', /CLIENT TRACKING refused: NOPERM/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(changes.length, 1);
    assert.equal(changes[0]?.mode, 'polling');
    assert.match(String(changes[0]?.reason?.message), /NOPERM/);
    assert.equal(channel.filter((m) => (m as { instance: unknown }).instance === lh).length, 1);
    await waiterWakes(lh, prefix);
    await lh.close();
  });

  test("an ACL without client|tracking: 'tracking' rejects connect() with NotificationsError", async () => {
    const url = `redis://notrack:secret@127.0.0.1:${redis.server.port}`;
    await assert.rejects(open(url, 'tracking'), (error: unknown) => {
      assert.ok(error instanceof NotificationsError);
      assert.equal(error.code, 'LEASEHOLD_ERR_NOTIFICATIONS');
      assert.match(String((error.cause as Error).message), /NOPERM/);
      return true;
    });
  });

  test("a proxy that drops pushes: 'auto' polls and a waiter still wakes; 'tracking' refuses", async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    proxy.dropPushes(true);
    const prefix = uniquePrefix('drop');
    const { lh, changes } = await open(proxy.url, 'auto', prefix);
    assert.equal(lh.notifications, 'polling');
    assert.match(lh.stats.notificationsReason ?? '', /no invalidation push within/);
    assert.ok(proxy.droppedPushes >= 1, 'the canary push was dropped');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      changes.map((c) => c.mode),
      ['polling'],
    );
    await waiterWakes(lh, prefix);
    await lh.close();
    await assert.rejects(open(proxy.url, 'tracking'), NotificationsError);
  });

  test('after a reconnect the canary proves every arming read again: tracking mode, its rule, and a holder hears a DEL', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const prefix = uniquePrefix('nt');
    const { lh } = await open(proxy.url, 'tracking', prefix);
    try {
      const before = await lh.acquire('before', { ttl: 20_000 });
      const reconnected = once(lh, 'reconnected');
      proxy.resetAll();
      await within(reconnected, 10_000, 'reconnect');
      const after = await lh.acquire('after', { ttl: 20_000 });
      assert.equal(lh.notifications, 'tracking');
      assert.equal(lh.stats.trackingRule, expectedRule());
      assert.equal(lh.stats.notificationsReason, undefined);
      // 'reverify' is not asked for: the lease from before the drop is lost with it (the default).
      assert.equal(before.lost, true);
      // The lease taken after the reconnect is tracked: its holder hears of a DEL at once (its
      // TTL is 20 s, and its next extension 6.7 s away).
      const lost = once(after.signal, 'abort');
      await command(redis.server.port, ['DEL', `${prefix}:{after}`]);
      await within(lost, 2_000, 'the holder hears of the DEL after the reconnect');
    } finally {
      await lh.close();
    }
  });

  test('after every reconnect the canary runs again: the mode follows what it proves', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const { lh, changes } = await open(proxy.url, 'auto');
    assert.equal(lh.notifications, 'tracking');
    proxy.dropPushes(true);
    let switched = once(lh, 'notifications');
    proxy.resetAll();
    const [down] = (await within(switched, 10_000, 'switch to polling')) as [Change];
    assert.equal(down.mode, 'polling');
    assert.equal(lh.notifications, 'polling');
    proxy.dropPushes(false);
    switched = once(lh, 'notifications');
    proxy.resetAll();
    const [up] = (await within(switched, 10_000, 'switch back to tracking')) as [Change];
    assert.equal(up.mode, 'tracking');
    assert.equal(up.reason, undefined);
    assert.deepEqual(
      changes.map((c) => c.mode),
      ['polling', 'tracking'],
    );
    await lh.close();
  });
});
