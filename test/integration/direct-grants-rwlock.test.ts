// Direct grants of a read-write lock's write lease (docs/direct-grants.md, "Read-write locks"): a
// write release, the last read release, or a withdraw that frees the lease grants it to a
// registered waiting writer and publishes it. The waiting writers are deaf (harness/grants.ts:
// they attempt only every 10 s, and refresh their registration only every ttl / 3), so a writer
// served within a second was served by a grant.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { grantProbes, HOLDER_TTL, rwKey } from '../harness/grants.ts';
import { mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const probes = grantProbes(redis);
const { deaf, subscribed } = probes;

const port = () => redis.server.port;

/** Waits until `n` waiting writers of `name` have a direct-grant record. */
const registered = (prefix: string, name: string, n: number) =>
  until(
    `${n} registered writer(s)`,
    async () => (await command(port(), ['HLEN', rwKey(prefix, name, 'grants')])) === n,
    { timeout: 5_000, interval: 10 },
  );

describe(`direct grants of a read-write lock (${mode})`, () => {
  test('the last reader out grants the write lease to the waiting writer, with a higher fencing token', async () => {
    const prefix = uniquePrefix('rwgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const lock = a.readWriteLock('config');
    const [r1, r2] = await Promise.all([lock.read(), lock.read()]);
    const writing = b.readWriteLock('config').write({ timeout: 30_000 });
    await registered(prefix, 'config', 1);
    await r1.release();
    assert.equal(
      await command(port(), ['EXISTS', rwKey(prefix, 'config', 'writer')]),
      0,
      'a reader still holds',
    );
    assert.equal(await command(port(), ['HLEN', rwKey(prefix, 'config', 'grants')]), 1, 'still registered');
    await r2.release();
    const lease = await within(writing, 1_000, 'the write lease granted');
    assert.ok(lease.fencingToken > r1.fencingToken && lease.fencingToken > r2.fencingToken);
    assert.equal(
      await command(port(), ['ZCARD', rwKey(prefix, 'config', 'waiting')]),
      0,
      'no longer waiting',
    );
    // The granted lease is a lease like any other: it keeps readers out, extends and releases.
    assert.equal(await lock.tryRead(), undefined, 'readers are kept out');
    await lease.extend();
    assert.ok(!lease.signal.aborted, 'extended');
    await lease.release();
    const reader = await lock.tryRead();
    assert.ok(reader !== undefined, 'released: readers enter');
    await reader.release();
    assert.equal(await command(port(), ['HLEN', rwKey(prefix, 'config', 'grants')]), 0, 'no record left');
  });

  test('a write release grants the write lease to the registered waiting writer', async () => {
    const prefix = uniquePrefix('rwgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.readWriteLock('config').write();
    const writing = b.readWriteLock('config').write({ timeout: 30_000 });
    await registered(prefix, 'config', 1);
    await held.release();
    const lease = await within(writing, 1_000, 'the write lease granted');
    assert.ok(lease.fencingToken > held.fencingToken);
    await lease.release();
  });

  test('a writer that gave up leaves no registration: readers enter at once', async () => {
    const prefix = uniquePrefix('rwgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const lock = a.readWriteLock('config');
    const reader = await lock.read();
    const controller = new AbortController();
    const writing = b.readWriteLock('config').write({ timeout: 30_000, signal: controller.signal });
    await registered(prefix, 'config', 1);
    assert.equal(await lock.tryRead(), undefined, 'the waiting writer keeps new readers out');
    controller.abort(new Error('gave up'));
    await assert.rejects(writing, /gave up/);
    await registered(prefix, 'config', 0);
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'waiting')]), 0);
    const second = await lock.tryRead();
    assert.ok(second !== undefined, 'readers enter again');
    await Promise.all([reader.release(), second.release()]);
    assert.equal(
      await command(port(), ['EXISTS', rwKey(prefix, 'config', 'writer')]),
      0,
      'nobody was granted',
    );
  });

  test('a waiting writer whose subscriber is gone, or past its deadline, is dropped, and readers enter', async () => {
    const prefix = uniquePrefix('rwgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const lock = a.readWriteLock('config');
    const reader = await lock.read();
    // A registration whose subscriber is gone (a process that died, a subscriber reconnecting).
    await command(port(), ['ZADD', rwKey(prefix, 'config', 'waiting'), String(Date.now() + 60_000), 'gone']);
    await command(port(), [
      'HSET',
      rwKey(prefix, 'config', 'grants'),
      'gone',
      `${prefix}:grants:gone\n30000\n1`,
    ]);
    // And a writer past its deadline (crashed): dropped with its record.
    await command(port(), ['ZADD', rwKey(prefix, 'config', 'waiting'), '1', 'dead']);
    await command(port(), [
      'HSET',
      rwKey(prefix, 'config', 'grants'),
      'dead',
      `${prefix}:grants:dead\n30000\n1`,
    ]);
    await reader.release();
    assert.equal(
      await command(port(), ['EXISTS', rwKey(prefix, 'config', 'writer')]),
      0,
      'nobody was granted',
    );
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'waiting')]), 0, 'dropped');
    assert.equal(await command(port(), ['HLEN', rwKey(prefix, 'config', 'grants')]), 0, 'its record too');
    const next = await lock.tryRead();
    assert.ok(next !== undefined, 'readers enter');
    await next.release();
  });
});
