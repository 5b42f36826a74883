// `leasehold status` tells the truth for every primitive (issue 22, item 8): it read only the
// mutex keys, so a semaphore with permits held, or a read lock, showed as "free, fencing 0".
// Real leases held by the library in this process; the CLI in a child process reads them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease } from '../../src/index.ts';
import { leasehold } from '../harness/cli.ts';
import { waiters } from '../harness/exercise.ts';
import { mode, testDriver, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';

const redis = useRedis();

interface Holder {
  owner: string;
  token: string;
  ttlLeft: number;
  since: number;
  fencingToken?: string;
  permits?: number;
  role?: string;
  value?: string;
}
interface Entry {
  primitive: string;
  held: boolean;
  keys: string[];
  holders: Holder[];
  waiters: { owner: string; role?: string; deadlineIn: number }[] | null;
  lastFencingToken: string;
  permitsInUse?: number;
  queued?: number;
}
interface Report {
  name: string;
  found: boolean;
  held: boolean;
  primitives: Entry[];
}

/** `status <name>` as text and as JSON, for this file's server and `prefix`. */
async function status(prefix: string, name: string): Promise<{ text: string; report: Report }> {
  const args = ['status', name, '--redis', redis.server.url, '--prefix', prefix, '--driver', testDriver];
  const [text, json] = await Promise.all([leasehold(args), leasehold([...args, '--json'])]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(json.code, 0, json.stderr);
  return { text: text.stdout, report: JSON.parse(json.stdout) as Report };
}

const TTL = 30_000;
const live = (ttl: number) => ttl > 0 && ttl <= TTL;

describe(`leasehold status, every primitive (${mode})`, () => {
  test('a mutex: holder, owner, TTL, fencing token; free once released, its counter kept', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const lease = await lh.acquire('job', { owner: 'alpha' });
    const { text, report } = await status(prefix, 'job');
    assert.equal(report.found, true);
    assert.equal(report.held, true);
    const [mutex] = report.primitives;
    assert.equal(report.primitives.length, 1);
    assert.equal(mutex?.primitive, 'mutex');
    assert.equal(mutex?.holders.length, 1);
    const [holder] = mutex!.holders;
    assert.equal(holder?.owner, 'alpha');
    assert.equal(holder?.token, lease.token);
    assert.equal(holder?.fencingToken, String(lease.fencingToken));
    assert.ok(live(holder!.ttlLeft), `ttl ${holder?.ttlLeft}`);
    assert.deepEqual(mutex?.waiters, [], 'nobody waits');
    assert.match(text, /^mutex {2}\(keys .*\)\n {2}state +held$/m);
    assert.match(
      text,
      new RegExp(
        `holder +alpha: fencing token ${lease.fencingToken}, [\\d.]+ s left, granted \\d{4}-[\\d-]+T[\\d:.]+Z \\([\\d.]+ m?s ago\\) at its first attempt, token`,
      ),
    );
    assert.match(text, /waiters +none \(a waiter is listed once it registers for a direct grant/);
    // A waiter in another process is listed once it registered (its second attempt).
    const other = await redis.instance(prefix, TTL);
    const ac = new AbortController();
    const waiting = other.acquire('job', { owner: 'beta', signal: ac.signal }).catch(() => undefined);
    // The text and the JSON are two CLI runs a moment apart: until both see it.
    const both = (s: { text: string; report: Report }) =>
      (s.report.primitives[0]?.waiters?.length ?? 0) > 0 && /beta: waiting since/.test(s.text);
    let shown = await status(prefix, 'job');
    for (let i = 0; i < 100 && !both(shown); i++) shown = await status(prefix, 'job');
    assert.equal(shown.report.primitives[0]?.waiters?.[0]?.owner, 'beta');
    assert.match(shown.text, /waiters +1 in line, first served first\n +1\. +beta: waiting since /);
    ac.abort();
    await waiting;
    // Its withdraw reaches Redis on its own connection: a release sent before it lands would
    // grant the lock to the waiter that gave up (and draw a fencing token for it).
    for (let i = 0; i < 100 && ((await lh.inspect('job'))?.waiters?.length ?? 0) > 0; i++) await sleep(10);

    await lease.release();
    const after = await status(prefix, 'job');
    assert.equal(after.report.held, false);
    assert.equal(after.report.primitives[0]?.lastFencingToken, String(lease.fencingToken));
    assert.match(after.text, /state +free/);
    assert.match(after.text, new RegExp(`fencing +${lease.fencingToken} \\(last token issued\\)`));
  });

  test('a semaphore: permits in use, each holder with its permits, owner and TTL', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const two = await lh.semaphore('uploads', { limit: 5 }).acquire({ permits: 2, owner: 'worker-a' });
    const one = await lh.semaphore('uploads', { limit: 5 }).acquire({ owner: 'worker-b' });
    const { text, report } = await status(prefix, 'uploads');
    assert.equal(report.held, true);
    const [sem] = report.primitives;
    assert.equal(sem?.primitive, 'semaphore');
    assert.equal(sem?.permitsInUse, 3);
    const byOwner = new Map(sem?.holders.map((h) => [h.owner, h]));
    assert.equal(byOwner.get('worker-a')?.permits, 2);
    assert.equal(byOwner.get('worker-a')?.token, two.token);
    assert.equal(byOwner.get('worker-b')?.permits, 1);
    for (const h of sem?.holders ?? []) assert.ok(live(h.ttlLeft), `ttl ${h.ttlLeft}`);
    assert.ok(BigInt(sem!.lastFencingToken) >= one.fencingToken);
    assert.match(text, /^semaphore {2}\(keys .*\)\n {2}state +held: 3 permits in use by 2 holders$/m);
    assert.match(text, /holder +worker-a: 2 permits, [\d.]+ s left/);
    assert.match(text, /holder +worker-b: 1 permit, [\d.]+ s left/);
    assert.match(text, /limit +not stored in Redis/);
    assert.doesNotMatch(text, /state +free/);
    await Promise.all([two.release(), one.release()]);
    const after = await status(prefix, 'uploads');
    assert.match(after.text, /state +free: no permit in use/);
  });

  test('a read-write lock: its readers and the writer waiting behind them; then the writer', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const rw = lh.readWriteLock('config');
    const readers = [await rw.read({ owner: 'reader-1' }), await rw.read({ owner: 'reader-2' })];
    const writing = rw.write({ owner: 'writer-1', timeout: 20_000 });
    await until('the writer to be recorded as waiting', waiters(lh, 'config', 'rwlock'), { timeout: 5_000 });
    const { text, report } = await status(prefix, 'config');
    const [entry] = report.primitives;
    assert.equal(entry?.primitive, 'rwlock');
    assert.deepEqual(entry?.holders.map((h) => [h.role, h.owner]).sort(), [
      ['reader', 'reader-1'],
      ['reader', 'reader-2'],
    ]);
    assert.deepEqual(
      entry?.waiters?.map((w) => [w.role, w.owner]),
      [['writer', 'writer-1']],
    );
    assert.match(text, /^read-write lock {2}\(keys .*\)\n {2}state +read-locked by 2 readers$/m);
    assert.match(text, /reader +reader-1: [\d.]+ s left/);
    assert.match(text, /waiters +1 in line, first served first\n +1\. +writer-1: writer, waiting since/);

    await Promise.all(readers.map((r) => r.release()));
    const writer: Lease = await writing;
    const held = await status(prefix, 'config');
    assert.match(held.text, /state +write-locked \(one writer\)/);
    assert.match(held.text, new RegExp(`writer +writer-1: fencing token ${writer.fencingToken}, `));
    assert.equal(held.report.primitives[0]?.holders[0]?.role, 'writer');
    await writer.release();
  });

  test('a fair lock: the holder and its queue, in line order', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const fair = lh.fairLock('payouts');
    const holder = await fair.acquire({ owner: 'first' });
    const second = fair.acquire({ owner: 'second', timeout: 20_000 });
    await until('"second" to be queued', waiters(lh, 'payouts', 'fair'), { timeout: 5_000 });
    const third = fair.acquire({ owner: 'third', timeout: 20_000 });
    await until(
      '"third" to be queued',
      async () => (await lh.inspect('payouts', { primitive: 'fair' }))?.waiters?.length === 2,
      { timeout: 5_000 },
    );
    const { text, report } = await status(prefix, 'payouts');
    const [entry] = report.primitives;
    assert.equal(entry?.primitive, 'fair');
    assert.equal(entry?.holders[0]?.owner, 'first');
    assert.equal(entry?.holders[0]?.fencingToken, String(holder.fencingToken));
    assert.deepEqual(
      entry?.waiters?.map((w) => w.owner),
      ['second', 'third'],
    );
    assert.equal(entry?.queued, 2);
    assert.match(text, /^fair lock {2}\(keys .*\)\n {2}state +held$/m);
    assert.match(text, /holder +first: fencing token \d+/);
    assert.match(
      text,
      /waiters +2 in line, first served first\n +1\. +second: waiting since .*\n +2\. +third: /,
    );
    await holder.release();
    await (await second).release();
    await (await third).release();
  });

  test('an election: the leader, its value and its term fencing token', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const term = await lh.election('scheduler').campaign('node-a', { owner: 'host-a' });
    await term.proclaim('node-a:8080');
    const { text, report } = await status(prefix, 'scheduler');
    const [entry] = report.primitives;
    assert.equal(entry?.primitive, 'election');
    assert.equal(entry?.holders[0]?.value, 'node-a:8080');
    assert.equal(entry?.holders[0]?.owner, 'host-a');
    assert.equal(entry?.holders[0]?.fencingToken, String(term.fencingToken));
    assert.match(text, /^election {2}\(keys .*\)\n {2}state +a leader holds the term$/m);
    assert.match(
      text,
      new RegExp(`leader +host-a: value "node-a:8080", fencing token ${term.fencingToken}, [\\d.]+ s left`),
    );
    await term.resign();
    assert.match((await status(prefix, 'scheduler')).text, /state +no leader/);
  });

  test("multiLock names are mutexes: each shows the multiLock's holder and its own token", async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const all = await lh.multiLock(['account:1', 'account:2']).acquire({ owner: 'transfer' });
    for (const name of ['account:1', 'account:2']) {
      const { report } = await status(prefix, name);
      const holder = report.primitives[0]?.holders[0];
      assert.equal(report.primitives[0]?.primitive, 'mutex');
      assert.equal(holder?.owner, 'transfer');
      assert.equal(holder?.fencingToken, String(all.fencingTokens.get(name)));
    }
    await all.release();
  });

  test('one name used by two primitives shows both; a name with nothing says so', async () => {
    const prefix = uniquePrefix('status');
    const lh = await redis.instance(prefix, TTL);
    const lock = await lh.acquire('shared', { owner: 'm' });
    const permit = await lh.semaphore('shared', { limit: 2 }).acquire({ owner: 's' });
    const both = await status(prefix, 'shared');
    assert.deepEqual(
      both.report.primitives.map((p) => p.primitive),
      ['mutex', 'semaphore'],
    );
    const only = await leasehold([
      'status',
      'shared',
      '--primitive',
      'semaphore',
      '--json',
      '--redis',
      redis.server.url,
      '--prefix',
      prefix,
      '--driver',
      testDriver,
    ]);
    assert.deepEqual(
      (JSON.parse(only.stdout) as Report).primitives.map((p) => p.primitive),
      ['semaphore'],
    );
    await Promise.all([lock.release(), permit.release()]);

    const nothing = await status(prefix, 'never-used');
    assert.deepEqual(
      { found: nothing.report.found, held: nothing.report.held, primitives: nothing.report.primitives },
      { found: false, held: false, primitives: [] },
    );
    assert.match(
      nothing.text,
      /state +nothing: no mutex, semaphore, read-write lock, fair lock or election has keys for this name/,
    );
  });
});
