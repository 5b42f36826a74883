// Direct grants of semaphore permits (docs/direct-grants.md): a release hands freed permits to the
// registered waiters that fit, in arrival order, and publishes each grant. Each test's waiters are
// deaf (harness/grants.ts: they attempt only every 10 s), so a waiter served within a second was
// served by a grant; the wake-all path would have taken 10 s.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { grantProbes, HOLDER_TTL } from '../harness/grants.ts';
import { lockKey, mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const probes = grantProbes(redis);
const { channels, deaf, subscribed } = probes;

const semKey = (prefix: string, name: string, role: string) => `${lockKey(prefix, name)}:sem${role}`;

/** Waits until `n` waiters of semaphore `name` are registered in Redis. */
const registered = (prefix: string, name: string, n: number) =>
  probes.registered(semKey(prefix, name, ':waiters'), n);

describe(`direct grants of semaphore permits (${mode})`, () => {
  test('a release hands the permit to the registered waiter at once, with a higher fencing token', async () => {
    const prefix = uniquePrefix('sgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.semaphore('pool', { limit: 1 }).acquire();
    const waiting = b.semaphore('pool', { limit: 1 }).acquire({ timeout: 30_000 });
    await registered(prefix, 'pool', 1);
    await held.release();
    const lease = await within(waiting, 1_000, 'the granted permit');
    assert.ok(lease.fencingToken > held.fencingToken, 'fencing token increased');
    assert.ok(!lease.signal.aborted);
    assert.equal(await a.semaphore('pool', { limit: 1 }).count(), 1, 'the grantee holds the one permit');
    assert.equal(await command(redis.server.port, ['ZCARD', semKey(prefix, 'pool', ':waiters')]), 0);
    // The granted lease is a lease like any other: it extends and releases.
    await lease.extend();
    assert.ok(!lease.signal.aborted, 'extended');
    await lease.release();
    assert.equal(await a.semaphore('pool', { limit: 1 }).count(), 0, 'released');
  });

  test('one release serves every registered waiter that fits, all permits or none', async () => {
    const prefix = uniquePrefix('sgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const [b, c, d] = await Promise.all([deaf(prefix), deaf(prefix), deaf(prefix)]);
    for (const lh of [b, c, d]) await subscribed(a, lh, prefix);
    const held = await a.semaphore('pool', { limit: 3 }).acquire({ permits: 3 });
    // In arrival order: two permits, one permit, then three (which cannot fit beside them).
    const two = b.semaphore('pool', { limit: 3 }).acquire({ permits: 2, timeout: 30_000 });
    await registered(prefix, 'pool', 1);
    const one = c.semaphore('pool', { limit: 3 }).acquire({ timeout: 30_000 });
    await registered(prefix, 'pool', 2);
    const three = d.semaphore('pool', { limit: 3 }).acquire({ permits: 3, timeout: 30_000 });
    await registered(prefix, 'pool', 3);
    await held.release();
    const [twoLease, oneLease] = await within(Promise.all([two, one]), 1_000, 'both granted');
    assert.ok(twoLease.fencingToken > held.fencingToken && oneLease.fencingToken > twoLease.fencingToken);
    assert.equal(await a.semaphore('pool', { limit: 3 }).count(), 3);
    // The three-permit waiter stays registered: it is granted when all three are free again.
    assert.equal(await command(redis.server.port, ['ZCARD', semKey(prefix, 'pool', ':waiters')]), 1);
    await twoLease.release();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await a.semaphore('pool', { limit: 3 }).count(), 1, 'two free are not enough for three');
    await oneLease.release();
    const threeLease = await within(three, 1_000, 'the three-permit waiter granted');
    assert.equal(await a.semaphore('pool', { limit: 3 }).count(), 3);
    await threeLease.release();
  });

  test('a waiter that does not fit keeps its place; one behind it that fits is served', async () => {
    const prefix = uniquePrefix('sgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const [b, c] = await Promise.all([deaf(prefix), deaf(prefix)]);
    for (const lh of [b, c]) await subscribed(a, lh, prefix);
    const pool = a.semaphore('pool', { limit: 3 });
    const two = await pool.acquire({ permits: 2 });
    const one = await pool.acquire();
    // First in line wants all three; behind it, one permit.
    const three = b.semaphore('pool', { limit: 3 }).acquire({ permits: 3, timeout: 30_000 });
    await registered(prefix, 'pool', 1);
    const single = c.semaphore('pool', { limit: 3 }).acquire({ timeout: 30_000 });
    await registered(prefix, 'pool', 2);
    await one.release();
    const singleLease = await within(single, 1_000, 'the one-permit waiter served past the first');
    assert.equal(
      await command(redis.server.port, ['ZRANGE', semKey(prefix, 'pool', ':waiters'), 0, -1]).then(
        (queue) => (queue as string[]).length,
      ),
      1,
      'the three-permit waiter is still registered',
    );
    await Promise.all([two.release(), singleLease.release()]);
    const threeLease = await within(three, 1_000, 'the three-permit waiter granted once all are free');
    assert.equal(await pool.count(), 3);
    await threeLease.release();
  });

  test('a waiter that gave up leaves no permit behind', async () => {
    const prefix = uniquePrefix('sgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.semaphore('pool', { limit: 1 }).acquire();
    const controller = new AbortController();
    const waiting = b.semaphore('pool', { limit: 1 }).acquire({ timeout: 30_000, signal: controller.signal });
    await registered(prefix, 'pool', 1);
    controller.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    await registered(prefix, 'pool', 0);
    await held.release();
    const again = await a.semaphore('pool', { limit: 1 }).tryAcquire();
    assert.ok(again !== undefined, 'the permit is free');
    await again.release();
  });

  test('a waiter whose subscriber is gone is skipped and the permit stays free', async () => {
    const prefix = uniquePrefix('sgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.semaphore('pool', { limit: 1 }).acquire();
    const waiting = b.semaphore('pool', { limit: 1 }).acquire({ timeout: 30_000 });
    const ended = assert.rejects(waiting, { code: 'LEASEHOLD_ERR_CONNECTION_CLOSED' });
    await registered(prefix, 'pool', 1);
    const live = await channels(prefix);
    await b.close();
    await ended;
    // close() does not wait for Redis to unregister its waiters: the registration may outlive
    // the subscriber (as it does when a process dies), and a grant must not strand the permit.
    await command(redis.server.port, ['ZADD', semKey(prefix, 'pool', ':waiters'), '1', 'gone']);
    await command(redis.server.port, [
      'HSET',
      semKey(prefix, 'pool', ':grants'),
      'gone',
      `${prefix}:grants:gone\n30000\n1\n1\n1`,
    ]);
    await until('the subscriber gone', async () => (await channels(prefix)) === live - 1, {
      timeout: 5_000,
      interval: 10,
    });
    await held.release();
    assert.equal(await a.semaphore('pool', { limit: 1 }).count(), 0, 'nobody was granted the permit');
    assert.equal(
      await command(redis.server.port, ['ZCARD', semKey(prefix, 'pool', ':waiters')]),
      0,
      'skipped',
    );
  });
});
