// Direct grants of a read-write lock's read leases (docs/direct-grants.md, "Read-write locks"):
// when no writer waits, a write release (or the last waiting writer giving up) makes every
// registered waiting reader a reader and publishes it. The waiters are deaf (harness/grants.ts:
// they attempt only every 10 s), so a reader served within a second was served by a grant.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Lease, Leasehold } from '../../src/index.ts';
import { grantProbes, HOLDER_TTL, rwKey } from '../harness/grants.ts';
import { mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const probes = grantProbes(redis);
const { deaf, subscribed } = probes;

const port = () => redis.server.port;

/**
 * `n` waiting readers of `name` on `lh`. Readers of one process wait in one local queue (as a
 * semaphore's do): the first registers for a grant, the others follow it the moment it is in.
 */
const waitingReaders = (lh: Leasehold, name: string, n: number) =>
  Array.from({ length: n }, () => lh.readWriteLock(name).read({ timeout: 30_000 }));
/** Waits until `n` processes' readers of `name` are registered for a grant. */
const registeredReaders = (prefix: string, name: string, n: number) =>
  probes.registered(rwKey(prefix, name, 'rqueue'), n);

const released = (leases: Lease[]) => Promise.all(leases.map((lease) => lease.release()));

describe(`direct grants of a read-write lock's read leases (${mode})`, () => {
  test('a write release grants every registered waiting reader a read lease of its own', async () => {
    const prefix = uniquePrefix('rdgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    const c = await deaf(prefix);
    await subscribed(a, b, prefix);
    await subscribed(a, c, prefix);
    const lock = a.readWriteLock('config');
    const held = await lock.write();
    const reads = [...waitingReaders(b, 'config', 2), ...waitingReaders(c, 'config', 1)];
    await registeredReaders(prefix, 'config', 2);
    await held.release();
    const readers = await within(Promise.all(reads), 1_000, 'the read leases granted');
    const fences = readers.map((reader) => reader.fencingToken);
    assert.equal(new Set(fences).size, 3, 'a fencing token each');
    for (const fence of fences) assert.ok(fence > held.fencingToken, 'above the writer that released');
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'readers')]), 3);
    assert.equal(await command(port(), ['EXISTS', rwKey(prefix, 'config', 'rqueue')]), 0, 'queue emptied');
    // Granted read leases are leases like any other: they keep writers out, extend and release.
    assert.equal(await lock.tryWrite(), undefined, 'writers are kept out');
    await Promise.all(readers.map((reader) => reader.extend()));
    assert.ok(
      readers.every((reader) => !reader.signal.aborted),
      'extended',
    );
    await released(readers);
    const writer = await lock.tryWrite();
    assert.ok(writer !== undefined, 'released: a writer enters');
    await writer.release();
    assert.equal(await command(port(), ['EXISTS', rwKey(prefix, 'config', 'rgrants')]), 0, 'no record left');
  });

  test('writer preference: a waiting writer is granted first, the readers at its release', async () => {
    const prefix = uniquePrefix('rdgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.readWriteLock('config').write();
    const writing = b.readWriteLock('config').write({ timeout: 30_000 });
    await probes.registered(rwKey(prefix, 'config', 'waiting'), 1);
    const reads = waitingReaders(b, 'config', 2);
    await registeredReaders(prefix, 'config', 1);
    await held.release();
    const writer = await within(writing, 1_000, 'the write lease granted');
    assert.equal(
      await command(port(), ['ZCARD', rwKey(prefix, 'config', 'rqueue')]),
      1,
      'readers still wait',
    );
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'readers')]), 0);
    await writer.release();
    const readers = await within(Promise.all(reads), 1_000, 'the read leases granted');
    for (const reader of readers) assert.ok(reader.fencingToken > writer.fencingToken);
    await released(readers);
  });

  test('the last waiting writer giving up grants the readers it kept out', async () => {
    const prefix = uniquePrefix('rdgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    // The readers wait on a third instance: the writer's own process wakes its readers itself.
    const c = await deaf(prefix);
    await subscribed(a, b, prefix);
    await subscribed(a, c, prefix);
    const reader = await a.readWriteLock('config').read();
    const controller = new AbortController();
    const writing = b.readWriteLock('config').write({ timeout: 30_000, signal: controller.signal });
    await probes.registered(rwKey(prefix, 'config', 'waiting'), 1);
    const reads = waitingReaders(c, 'config', 2);
    await registeredReaders(prefix, 'config', 1);
    controller.abort(new Error('gave up'));
    await assert.rejects(writing, /gave up/);
    const readers = await within(Promise.all(reads), 1_000, 'the read leases granted');
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'readers')]), 3);
    await released([reader, ...readers]);
  });

  test('a reader that gave up leaves no registration, and gives back a lease granted to it meanwhile', async () => {
    const prefix = uniquePrefix('rdgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const lock = a.readWriteLock('config');
    const held = await lock.write();
    const controller = new AbortController();
    const reading = b.readWriteLock('config').read({ timeout: 30_000, signal: controller.signal });
    await registeredReaders(prefix, 'config', 1);
    const [token] = (await command(port(), ['ZRANGE', rwKey(prefix, 'config', 'rqueue'), 0, 0])) as string[];
    // The grant a release makes, without its message: the race of a grant with giving up.
    await command(port(), ['ZREM', rwKey(prefix, 'config', 'rqueue'), token!]);
    await command(port(), ['ZADD', rwKey(prefix, 'config', 'readers'), String(Date.now() + 60_000), token!]);
    await command(port(), ['HSET', rwKey(prefix, 'config', 'rgrants'), token!, '=99\n1']);
    controller.abort(new Error('gave up'));
    await assert.rejects(reading, /gave up/);
    await until(
      'the granted lease given back',
      async () => (await command(port(), ['ZCARD', rwKey(prefix, 'config', 'readers')])) === 0,
      { timeout: 5_000, interval: 10 },
    );
    assert.equal(await command(port(), ['EXISTS', rwKey(prefix, 'config', 'rgrants')]), 0, 'no record left');
    await held.release();
    const writer = await lock.tryWrite();
    assert.ok(writer !== undefined, 'nobody reads: a writer enters');
    await writer.release();
  });

  test('a registered reader nobody hears any more is taken out again, and its record deleted', async () => {
    const prefix = uniquePrefix('rdgrant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const lock = a.readWriteLock('config');
    const held = await lock.write();
    // A registration whose subscriber is gone (a process that died, a subscriber reconnecting).
    await command(port(), ['ZADD', rwKey(prefix, 'config', 'rqueue'), '1', 'gone']);
    await command(port(), [
      'HSET',
      rwKey(prefix, 'config', 'rgrants'),
      'gone',
      `${prefix}:grants:gone\n30000\n1`,
    ]);
    await held.release();
    assert.equal(await command(port(), ['ZCARD', rwKey(prefix, 'config', 'readers')]), 0, 'nobody reads');
    assert.equal(await command(port(), ['EXISTS', rwKey(prefix, 'config', 'rqueue')]), 0, 'dropped');
    assert.equal(await command(port(), ['EXISTS', rwKey(prefix, 'config', 'rgrants')]), 0, 'its record too');
    const writer = await lock.tryWrite();
    assert.ok(writer !== undefined, 'the lock is free');
    await writer.release();
  });
});
