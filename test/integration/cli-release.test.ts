// `leasehold release --force` frees every primitive (issue 26, item 3): through the primitive's own
// release, so the next in line gets in at once with a fencing token above the one printed, and
// the freed holder's signal aborts (at once where its lease listens to its own key; a permit or
// a reader at its next extension). Real leases in this process; the CLI in a child process.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockLostError } from '../../src/index.ts';
import { leasehold } from '../harness/cli.ts';
import { aborted, mode, testDriver, tracking, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';

const redis = useRedis();

interface Released {
  name: string;
  primitive: string;
  released: boolean;
  freed: { token: string; owner?: string; role?: string; permits?: number; released: boolean }[];
  lastFencingToken: string;
}

/** `release --force <name> [extra]` as JSON, and as text, for this file's server and `prefix`. */
async function release(prefix: string, name: string, extra: string[] = []): Promise<Released> {
  const args = [
    'release',
    '--force',
    name,
    '--redis',
    redis.server.url,
    '--prefix',
    prefix,
    '--driver',
    testDriver,
  ];
  const json = await leasehold([...args, ...extra, '--json']);
  assert.equal(json.code, 0, json.stderr);
  return JSON.parse(json.stdout) as Released;
}

const TTL = 1_500;
/** A lease listening to its own key aborts on the push; in polling mode at its next extension. */
const AT_ONCE = tracking ? 1_000 : TTL;
/** A permit or a reader learns at its next extension (a third of the TTL), wherever it runs. */
const AT_EXTENSION = TTL;

describe(`leasehold release --force, every primitive (${mode})`, () => {
  test('a mutex: the holder aborts, the waiter is granted it with a higher fencing token', async () => {
    const prefix = uniquePrefix('rel');
    const lh = await redis.instance(prefix, TTL);
    const other = await redis.instance(prefix, TTL);
    const held = await lh.acquire('job', { owner: 'stuck' });
    const waiting = other.acquire('job', { owner: 'next', timeout: 10_000 });
    const out = await release(prefix, 'job');
    assert.equal(out.primitive, 'mutex');
    assert.equal(out.released, true);
    assert.deepEqual(out.freed, [{ token: held.token, owner: 'stuck', released: true }]);
    assert.equal(out.lastFencingToken, String(held.fencingToken));
    assert.ok((await within(aborted(held.signal), AT_ONCE, 'the holder aborts')) instanceof LockLostError);
    const next = await within(waiting, 2_000, 'the waiter gets in');
    assert.ok(next.fencingToken > BigInt(out.lastFencingToken));
    await next.release();
    // Nothing held now: says so, exit 0.
    const again = await release(prefix, 'job');
    assert.equal(again.released, false);
    assert.deepEqual(again.freed, []);
  });

  test('a semaphore: one holder by --token, or all; waiters get the permits', async () => {
    const prefix = uniquePrefix('rel');
    const lh = await redis.instance(prefix, TTL);
    const sem = lh.semaphore('pool', { limit: 3 });
    const a = await sem.acquire({ permits: 2, owner: 'a' });
    const b = await sem.acquire({ owner: 'b' });
    const waiting = (await redis.instance(prefix, TTL))
      .semaphore('pool', { limit: 3 })
      .acquire({ permits: 2 });
    // `--token=`: a token is base64url, and one in 64 starts with "-", which a separate argument
    // cannot carry (it reads as an option); the CLI says so and suggests this form.
    const one = await release(prefix, 'pool', [`--token=${a.token}`]);
    assert.equal(one.primitive, 'semaphore');
    assert.deepEqual(one.freed, [{ token: a.token, owner: 'a', permits: 2, released: true }]);
    const next = await within(waiting, 2_000, 'the waiter gets the freed permits');
    assert.ok((await within(aborted(a.signal), AT_EXTENSION, 'a learns')) instanceof LockLostError);
    assert.equal(b.lost, false, 'the other holder keeps its permit');
    const all = await release(prefix, 'pool');
    assert.deepEqual(all.freed.map((f) => f.token).sort(), [b.token, next.token].sort());
    assert.ok((await within(aborted(b.signal), AT_EXTENSION, 'b learns')) instanceof LockLostError);
    assert.equal(await sem.count(), 0);
  });

  test('a read-write lock: the writer, then the readers; a waiting writer gets in', async () => {
    const prefix = uniquePrefix('rel');
    const lh = await redis.instance(prefix, TTL);
    const rw = lh.readWriteLock('doc');
    const writer = await rw.write({ owner: 'w' });
    const out = await release(prefix, 'doc');
    assert.equal(out.primitive, 'rwlock');
    assert.deepEqual(out.freed, [{ token: writer.token, owner: 'w', role: 'writer', released: true }]);
    assert.ok((await within(aborted(writer.signal), AT_ONCE, 'the writer aborts')) instanceof LockLostError);
    const r1 = await rw.read({ owner: 'r1' });
    const r2 = await rw.read({ owner: 'r2' });
    const nextWriter = (await redis.instance(prefix, TTL)).readWriteLock('doc').write({ timeout: 10_000 });
    const readers = await release(prefix, 'doc');
    assert.deepEqual(readers.freed.map((f) => [f.role, f.owner]).sort(), [
      ['reader', 'r1'],
      ['reader', 'r2'],
    ]);
    const got = await within(nextWriter, 2_000, 'the waiting writer gets in');
    assert.ok(got.fencingToken > BigInt(readers.lastFencingToken));
    for (const r of [r1, r2])
      assert.ok((await within(aborted(r.signal), AT_EXTENSION, 'a reader learns')) instanceof LockLostError);
    await got.release();
  });

  test('a fair lock and an election: the first in line is served, the leader steps down', async () => {
    const prefix = uniquePrefix('rel');
    const lh = await redis.instance(prefix, TTL);
    const other = await redis.instance(prefix, TTL);
    const holder = await lh.fairLock('line').acquire({ owner: 'h' });
    const first = other.fairLock('line').acquire({ owner: 'first', timeout: 10_000 });
    const out = await release(prefix, 'line');
    assert.equal(out.primitive, 'fair');
    assert.deepEqual(out.freed, [{ token: holder.token, owner: 'h', released: true }]);
    assert.ok((await within(aborted(holder.signal), AT_ONCE, 'the holder aborts')) instanceof LockLostError);
    const served = await within(first, 2_000, 'the first in line gets in');
    assert.ok(served.fencingToken > BigInt(out.lastFencingToken));
    await served.release();

    const term = await lh.election('lead').campaign('node-a', { owner: 'leader' });
    const next = other.election('lead').campaign('node-b', { timeout: 10_000 });
    const resigned = await release(prefix, 'lead');
    assert.equal(resigned.primitive, 'election');
    assert.deepEqual(resigned.freed, [{ token: term.token, owner: 'leader', released: true }]);
    assert.ok((await within(aborted(term.signal), AT_ONCE, 'the leader aborts')) instanceof LockLostError);
    const successor = await within(next, 2_000, 'a candidate is elected');
    assert.ok(successor.fencingToken > BigInt(resigned.lastFencingToken));
    await successor.release();
  });

  test('a name held as two primitives needs --primitive; a wrong token frees nothing', async () => {
    const prefix = uniquePrefix('rel');
    const lh = await redis.instance(prefix, TTL);
    const mutex = await lh.acquire('both');
    const permit = await lh.semaphore('both', { limit: 1 }).acquire();
    const args = ['release', '--force', 'both', '--redis', redis.server.url, '--prefix', prefix];
    const refused = await leasehold([...args, '--driver', testDriver]);
    assert.equal(refused.code, 64);
    assert.match(refused.stderr, /"both" is held as mutex and semaphore: say which with --primitive/);
    const none = await release(prefix, 'both', ['--primitive', 'semaphore', '--token', 'nobody']);
    assert.deepEqual(none.freed, []);
    const text = await leasehold([...args, '--driver', testDriver, '--primitive', 'semaphore']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      new RegExp(`^released semaphore "both"\\n +[^\\n]+, 1 permit, token ${permit.token}\\n`),
    );
    assert.match(text.stdout, /the next holder's fencing token will exceed \d+\n$/);
    assert.equal(mutex.lost, false, 'the mutex of the same name is untouched');
    await mutex.release();
  });
});
