// lh.list() and the live view behind `leasehold top` and the dashboard read the names they need
// together, so that their reads share round trips: read one after the other, each name cost a
// round trip (two with holders: the grant notes), which a network's latency multiplied (300 held
// names over a 1 ms round trip took 1.7 s to list, more than `top`'s refresh). Through a proxy
// that delays every round trip by 200 ms, 40 held names took 80 of them (16 s) to list one by
// one, and 40 released names 40 of them (8 s) to leave the view; together they take a handful.
// inspect() without a primitive sends its five looks together too, and `release --force` its
// releases of a semaphore's holders.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LiveView } from '../../src/cli/live.ts';
import { openTargets } from '../../src/cli/targets.ts';
import { forceRelease } from '../../src/inspect/force.ts';
import { mode, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { FaultProxy } from '../harness/proxy.ts';

const redis = useRedis();
const { instance } = redis;

describe(`list() over a slow network (${mode})`, () => {
  test('40 held names are listed in a handful of round trips, not two per name', async () => {
    const prefix = uniquePrefix('lr');
    const holder = await instance(prefix, 30_000);
    const names = Array.from({ length: 40 }, (_, i) => `job:${String(i).padStart(2, '0')}`);
    const leases = await Promise.all(names.map((name) => holder.acquire(name)));
    await using proxy = await FaultProxy.start(redis.server.port);
    const viewer = await instance(prefix, 30_000, { url: proxy.url });
    // Scripts loaded before the delay: a first EVALSHA's NOSCRIPT would cost a round trip more.
    assert.equal((await viewer.list({ prefix: 'job:', limit: 1 })).length, 1);
    proxy.setLatency(100);
    const listed = await within(
      viewer.list({ prefix: 'job:' }),
      3_000,
      'list() of 40 names (200 ms round trips)',
    );
    assert.deepEqual(
      listed.map((entry) => entry.name),
      names,
    );
    assert.ok(listed.every((entry, i) => entry.holders[0]?.token === leases[i]?.token));
    proxy.setLatency(0);
    for (const lease of leases) await lease.release();
  });

  test('40 names released at once leave the live view in a handful of round trips', {
    skip:
      testDriver === 'glide' ? 'GLIDE hands its user no pushes: the view re-reads with list() there' : false,
  }, async () => {
    const prefix = uniquePrefix('lr');
    const holder = await instance(prefix, 30_000);
    const names = Array.from({ length: 40 }, (_, i) => `job:${String(i).padStart(2, '0')}`);
    const leases = await Promise.all(names.map((name) => holder.acquire(name)));
    await using proxy = await FaultProxy.start(redis.server.port);
    const view = new LiveView(
      { url: proxy.url, topology: { kind: 'redis' }, prefix, driver: testDriver },
      'job:',
      100,
    );
    try {
      await view.start();
      assert.equal(view.entries.size, 40);
      proxy.setLatency(100);
      const reads = view.reads;
      await Promise.all(leases.map((lease) => lease.release()));
      await until('the released names leave the view', async () => view.entries.size === 0, {
        timeout: 3_000,
      });
      // Each released name was read again (a push for it), none left unread.
      assert.ok(view.reads - reads >= 40, `${view.reads - reads} reads`);
    } finally {
      proxy.setLatency(0);
      await view.close();
    }
  });

  test("inspect() without a primitive looks for all five at once: an election's leader in two round trips", async () => {
    const prefix = uniquePrefix('lr');
    const holder = await instance(prefix, 30_000);
    const term = await holder.election('leader').campaign('me');
    await using proxy = await FaultProxy.start(redis.server.port);
    const viewer = await instance(prefix, 30_000, { url: proxy.url });
    // Every script loaded before the delay: a first EVALSHA's NOSCRIPT would cost a round trip more.
    assert.equal((await viewer.inspect('leader'))?.primitive, 'election');
    proxy.setLatency(150);
    // The election is the last of the five looks: one by one, five round trips and the notes' (1.8 s).
    const started = Date.now();
    const found = await within(
      viewer.inspect('leader'),
      1_200,
      'inspect() of an election (300 ms round trips)',
    );
    assert.equal(found?.primitive, 'election');
    assert.equal(found?.holders[0]?.token, term.token);
    assert.ok(Date.now() - started >= 600, 'two round trips at least: the delay was applied');
    proxy.setLatency(0);
    await term.resign();
  });

  test("release --force of a semaphore's 40 holders sends their releases together", async () => {
    const prefix = uniquePrefix('lr');
    const holder = await instance(prefix, 30_000);
    const pool = holder.semaphore('pool', { limit: 40 });
    const leases = await Promise.all(Array.from({ length: 40 }, () => pool.acquire()));
    await using proxy = await FaultProxy.start(redis.server.port);
    const { drivers } = await openTargets(
      { url: proxy.url, topology: { kind: 'redis' }, prefix, driver: testDriver },
      false,
    );
    const driver = drivers[0]!;
    try {
      // The release script loaded before the delay: a first EVALSHA's NOSCRIPT costs a round trip.
      const none = await forceRelease(driver, prefix, 'pool', 'semaphore', 'no-such-token');
      assert.deepEqual(none, []);
      await forceRelease(driver, prefix, 'pool', 'semaphore', leases[0]!.token);
      proxy.setLatency(100);
      // One release after the other took 39 round trips (7.8 s).
      const freed = await within(
        forceRelease(driver, prefix, 'pool', 'semaphore'),
        3_000,
        'release --force of 39 holders (200 ms round trips)',
      );
      assert.deepEqual(
        freed.map((f) => f.token).sort(),
        leases
          .slice(1)
          .map((l) => l.token)
          .sort(),
      );
      assert.ok(freed.every((f) => f.released && f.permits === 1));
      proxy.setLatency(0);
      assert.equal(await pool.count(), 0);
    } finally {
      proxy.setLatency(0);
      await driver.close();
    }
  });
});
