// Direct grants of a fair lock (docs/direct-grants.md, "Fair locks"): a release grants the lock to
// the first waiter in line when it registered for a grant, and publishes it; a waiter that cannot
// be reached keeps its place and is woken by its turn key. The waiters are deaf (harness/grants.ts:
// they attempt only every 10 s, and a fair waiter refreshes its place only every ttl / 3), so a
// waiter served within a second was served by a grant.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockLostError } from '../../src/index.ts';
import { grantProbes, HOLDER_TTL } from '../harness/grants.ts';
import { lockKey, mode, testNotifications, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const probes = grantProbes(redis);
const { deaf, subscribed } = probes;

const fairKey = (prefix: string, name: string, role = '') => `${lockKey(prefix, name)}:fair${role}`;
const port = () => redis.server.port;

/** Waits until `n` waiters of fair lock `name` have a direct-grant record. */
const registered = (prefix: string, name: string, n: number) =>
  until(
    `${n} registered fair waiter(s)`,
    async () => (await command(port(), ['HLEN', fairKey(prefix, name, ':grants')])) === n,
    { timeout: 5_000, interval: 10 },
  );

describe(`direct grants of a fair lock (${mode})`, () => {
  test('a release grants the first in line at once; the next keeps its place and is granted next', async () => {
    const prefix = uniquePrefix('fgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const [b, c] = await Promise.all([deaf(prefix), deaf(prefix)]);
    for (const lh of [b, c]) await subscribed(a, lh, prefix);
    const held = await a.fairLock('payouts').acquire();
    const first = b.fairLock('payouts').acquire({ timeout: 30_000 });
    await registered(prefix, 'payouts', 1);
    const second = c.fairLock('payouts').acquire({ timeout: 30_000 });
    await registered(prefix, 'payouts', 2);
    await held.release();
    const firstLease = await within(first, 1_000, 'the first in line granted');
    assert.ok(firstLease.fencingToken > held.fencingToken, 'fencing token increased');
    const line = (await command(port(), ['ZRANGE', fairKey(prefix, 'payouts', ':queue'), 0, -1])) as string[];
    assert.equal(line.length, 1, 'the second waiter is still in line');
    assert.match(
      String(await command(port(), ['HGET', fairKey(prefix, 'payouts', ':grants'), line[0]!])),
      /^[^=\n][^\n]*\n\d+\n\d+$/,
      'with its registration (not a grant)',
    );
    // The granted lease is a lease like any other: it extends and releases.
    await firstLease.extend();
    assert.ok(!firstLease.signal.aborted, 'extended');
    await firstLease.release();
    const secondLease = await within(second, 1_000, 'the second in line granted');
    assert.ok(secondLease.fencingToken > firstLease.fencingToken);
    await secondLease.release();
    assert.equal(await command(port(), ['EXISTS', fairKey(prefix, 'payouts')]), 0, 'released');
    assert.equal(await command(port(), ['ZCARD', fairKey(prefix, 'payouts', ':queue')]), 0, 'nobody in line');
    assert.equal(await command(port(), ['HLEN', fairKey(prefix, 'payouts', ':grants')]), 0, 'no record left');
  });

  test('a waiter that gave up leaves the line and its record; the one behind it is granted', async () => {
    const prefix = uniquePrefix('fgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const [b, c] = await Promise.all([deaf(prefix), deaf(prefix)]);
    for (const lh of [b, c]) await subscribed(a, lh, prefix);
    const held = await a.fairLock('payouts').acquire();
    const controller = new AbortController();
    const first = b.fairLock('payouts').acquire({ timeout: 30_000, signal: controller.signal });
    await registered(prefix, 'payouts', 1);
    const second = c.fairLock('payouts').acquire({ timeout: 30_000 });
    await registered(prefix, 'payouts', 2);
    controller.abort(new Error('gave up'));
    await assert.rejects(first, /gave up/);
    await registered(prefix, 'payouts', 1);
    assert.equal(await command(port(), ['ZCARD', fairKey(prefix, 'payouts', ':queue')]), 1);
    await held.release();
    const lease = await within(second, 1_000, 'the waiter behind granted');
    await lease.release();
  });

  test('a first in line whose subscriber is gone keeps its place and gets its turn key; one past its deadline is dropped', async () => {
    const prefix = uniquePrefix('fgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const held = await a.fairLock('payouts').acquire();
    // A registration whose subscriber is gone (a process that died, a subscriber reconnecting):
    // in line first, with a record naming a channel nobody listens on.
    await command(port(), ['ZADD', fairKey(prefix, 'payouts', ':queue'), '1', 'gone']);
    await command(port(), [
      'ZADD',
      fairKey(prefix, 'payouts', ':deadlines'),
      String(Date.now() + 60_000),
      'gone',
    ]);
    await command(port(), [
      'HSET',
      fairKey(prefix, 'payouts', ':grants'),
      'gone',
      `${prefix}:grants:gone\n30000\n1`,
    ]);
    // And a waiter past its deadline (crashed): it leaves the line with its record.
    await command(port(), ['ZADD', fairKey(prefix, 'payouts', ':queue'), '0', 'dead']);
    await command(port(), ['ZADD', fairKey(prefix, 'payouts', ':deadlines'), '1', 'dead']);
    await command(port(), [
      'HSET',
      fairKey(prefix, 'payouts', ':grants'),
      'dead',
      `${prefix}:grants:dead\n30000\n1`,
    ]);
    await held.release();
    assert.equal(
      await command(port(), ['HEXISTS', fairKey(prefix, 'payouts', ':grants'), 'dead']),
      0,
      'dead record gone',
    );
    assert.equal(
      await command(port(), ['EXISTS', fairKey(prefix, 'payouts')]),
      0,
      'nobody was granted the lock',
    );
    assert.equal(
      await command(port(), ['GET', fairKey(prefix, 'payouts', ':turn:gone')]),
      '1',
      'woken by its turn',
    );
    assert.deepEqual(await command(port(), ['ZRANGE', fairKey(prefix, 'payouts', ':queue'), 0, -1]), [
      'gone',
    ]);
    assert.equal(
      await command(port(), ['HEXISTS', fairKey(prefix, 'payouts', ':grants'), 'gone']),
      0,
      'record gone',
    );
    // Its own attempt then takes the lock in its turn, as without grants.
    const newcomer = await a.fairLock('payouts').tryAcquire();
    assert.equal(newcomer, undefined, 'a newcomer does not jump the line');
  });

  test('a granted holder hears of its loss at once', {
    skip: testNotifications === 'polling' && 'a polling holder learns of a loss at its next check, by design',
  }, async () => {
    const prefix = uniquePrefix('fgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await redis.instance(prefix, HOLDER_TTL);
    await subscribed(a, b, prefix);
    const held = await a.fairLock('payouts').acquire();
    const waiting = b.fairLock('payouts').acquire({ timeout: 30_000 });
    await registered(prefix, 'payouts', 1);
    // The holder's extension pushes to the waiter if it tracked the lock key: afterwards only a
    // fresh read can arm it.
    await held.extend();
    await held.release();
    const lease = await within(waiting, 1_000, 'granted');
    await command(port(), ['DEL', fairKey(prefix, 'payouts')]);
    await within(
      new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true })),
      1_000,
      'the loss heard at once',
    );
    assert.ok(lease.signal.reason instanceof LockLostError);
  });
});
