// lh.inspect() and lh.list() on one Redis: owner metadata on every primitive, waiters in line
// order, list() by prefix and primitive. inspect-topologies.test.ts: the memory backend, a Redis
// Cluster (every master scanned) and a quorum of masters (what each node says).
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { basename } from 'node:path';
import { describe, test } from 'node:test';
import { Leasehold } from '../../src/index.ts';
import { lockKey, mode, testDriver, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const { instance } = redis;

describe(`inspection on one Redis (${mode})`, () => {
  test('a mutex: owner, since, ttlLeft, fencing token; the default owner is host:pid:title', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 5_000);
    const before = Date.now();
    const lease = await lh.acquire('cron:purge', { owner: 'billing-worker-3' });
    const state = await lh.inspect('cron:purge');
    assert.ok(state);
    assert.equal(state.primitive, 'mutex');
    assert.deepEqual(state.waiters, []);
    assert.equal(state.lastFencingToken, lease.fencingToken);
    const [holder] = state.holders;
    assert.ok(holder);
    assert.equal(holder.owner, 'billing-worker-3');
    assert.equal(holder.token, lease.token);
    assert.equal(holder.fencingToken, lease.fencingToken);
    assert.ok(holder.since !== undefined && holder.since >= before - 1 && holder.since <= Date.now());
    assert.ok(holder.ttlLeft > 4_000 && holder.ttlLeft <= 5_000, `ttlLeft ${holder.ttlLeft}`);
    // The stored value starts with the token; the token itself stays 128 random bits.
    const stored = (await command(redis.server.port, ['GET', lockKey(prefix, 'cron:purge')])) as string;
    assert.ok(stored.startsWith(`${lease.token}~`));
    assert.equal(Buffer.from(lease.token, 'base64url').length, 16);
    // Compare-and-act is unchanged: extend and release still find their value.
    await lease.extend();
    assert.equal(lease.lost, false);
    assert.equal(await lease.release(), true);
    const free = await lh.inspect('cron:purge');
    assert.deepEqual(free?.holders, []);
    assert.equal(free?.lastFencingToken, lease.fencingToken);

    const plain = await lh.acquire('plain');
    const [h] = (await lh.inspect('plain'))?.holders ?? [];
    assert.equal(h?.owner, `${hostname()}:${process.pid}:${basename(process.title)}`);
    await plain.release();
    assert.equal(await lh.inspect('never-used'), undefined);
  });

  test('the instance owner applies to every acquire without its own; tryAcquire and forceAcquire take one', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 2_000, { owner: 'api-7' });
    const first = await lh.tryAcquire('job');
    assert.equal((await lh.inspect('job'))?.holders[0]?.owner, 'api-7');
    const forced = await lh.forceAcquire('job', { owner: 'operator' });
    assert.equal(first?.lost, true);
    const state = await lh.inspect('job');
    assert.equal(state?.holders[0]?.owner, 'operator');
    assert.equal(state?.holders[0]?.fencingToken, forced.fencingToken);
    await forced.release();
  });

  test('a semaphore: one holder per lease with its permits', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const sem = lh.semaphore('uploads', { limit: 5 });
    const a = await sem.acquire({ permits: 2, owner: 'a' });
    const b = await sem.acquire({ owner: 'b' });
    const state = await lh.inspect('uploads');
    assert.equal(state?.primitive, 'semaphore');
    assert.equal(state?.permitsInUse, 3);
    assert.equal(state?.lastFencingToken, b.fencingToken);
    const byOwner = new Map(state?.holders.map((h) => [h.owner, h]));
    assert.equal(byOwner.get('a')?.permits, 2);
    assert.equal(byOwner.get('a')?.token, a.token);
    assert.equal(byOwner.get('b')?.permits, 1);
    assert.equal(byOwner.get('b')?.fencingToken, undefined);
    assert.ok((byOwner.get('a')?.ttlLeft ?? 0) > 2_000);
    await a.release();
    await b.release();
    assert.equal(await sem.count(), 0);
  });

  test('a read-write lock: readers, the writer, and waiting writers', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const rw = lh.readWriteLock('config');
    const r1 = await rw.read({ owner: 'reader-1' });
    const r2 = await rw.read({ owner: 'reader-2' });
    const ac = new AbortController();
    const waiting = rw.write({ owner: 'writer-1', signal: ac.signal }).catch(() => undefined);
    let state = await lh.inspect('config', { primitive: 'rwlock' });
    for (let i = 0; i < 50 && (state?.waiters?.length ?? 0) === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      state = await lh.inspect('config', { primitive: 'rwlock' });
    }
    assert.deepEqual(state?.holders.map((h) => [h.role, h.owner]).sort(), [
      ['reader', 'reader-1'],
      ['reader', 'reader-2'],
    ]);
    assert.equal(state?.waiters?.[0]?.owner, 'writer-1');
    assert.equal(state?.waiters?.[0]?.role, 'writer');
    assert.ok((state?.waiters?.[0]?.deadlineIn ?? 0) > 0);
    await r1.release();
    await r2.release();
    const writer = await waiting;
    assert.ok(writer);
    state = await lh.inspect('config');
    assert.equal(state?.holders.length, 1);
    assert.equal(state?.holders[0]?.role, 'writer');
    assert.equal(state?.holders[0]?.owner, 'writer-1');
    assert.equal(state?.holders[0]?.fencingToken, writer.fencingToken);
    assert.deepEqual(state?.waiters, []);
    await writer.release();
  });

  test('waiters registered for a direct grant: a mutex, a semaphore and readers, in line order', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 5_000);
    const other = await instance(prefix, 5_000);
    const ac = new AbortController();
    const gaveUp = <T>(p: Promise<T>) => p.catch(() => undefined);
    const owners = async (name: string, primitive?: 'rwlock') =>
      (await lh.inspect(name, primitive === undefined ? {} : { primitive }))?.waiters?.map((w) => w.owner);

    const held = await lh.acquire('report', { owner: 'holder' });
    const before = Date.now();
    const first = gaveUp(other.acquire('report', { owner: 'first', signal: ac.signal }));
    await waitFor(async () => (await owners('report'))?.length === 1);
    const second = gaveUp(lh.acquire('report', { owner: 'second', signal: ac.signal }));
    await waitFor(async () => (await owners('report'))?.length === 2);
    const state = await lh.inspect('report');
    assert.deepEqual(
      state?.waiters?.map((w) => w.owner),
      ['first', 'second'],
    );
    assert.equal(state?.queued, 2);
    const [w] = state?.waiters ?? [];
    assert.ok(
      w?.since !== undefined && w.since >= before - 1 && w.since <= Date.now(),
      'since: when it asked',
    );
    assert.ok(
      (w?.deadlineIn ?? 0) > 5_000,
      `dropped after twice the TTL unless it retries (${w?.deadlineIn})`,
    );
    // Served: the first in line holds, and leaves the list.
    await held.release();
    const next = await first;
    assert.ok(next);
    await waitFor(async () => (await owners('report'))?.join() === 'second');

    const sem = lh.semaphore('uploads', { limit: 1 });
    const permit = await sem.acquire({ owner: 'p' });
    const queued = gaveUp(
      other.semaphore('uploads', { limit: 1 }).acquire({ owner: 'q', signal: ac.signal }),
    );
    await waitFor(async () => (await owners('uploads'))?.join() === 'q');

    const rw = lh.readWriteLock('config');
    const writer = await rw.write({ owner: 'w' });
    const reader = gaveUp(other.readWriteLock('config').read({ owner: 'r', signal: ac.signal }));
    await waitFor(async () => (await owners('config', 'rwlock'))?.join() === 'r');
    const readerState = await lh.inspect('config', { primitive: 'rwlock' });
    assert.equal(readerState?.waiters?.[0]?.role, 'reader');

    // Giving up withdraws: nobody is listed any more.
    ac.abort();
    await Promise.all([second, queued, reader]);
    // Each withdraw reaches Redis on its own: wait for all three.
    await waitFor(async () => (await owners('report'))?.length === 0);
    await waitFor(async () => (await owners('uploads'))?.length === 0);
    await waitFor(async () => (await owners('config', 'rwlock'))?.length === 0);
    await Promise.all([next.release(), permit.release(), writer.release()]);
  });

  test('a fair lock: the holder and the queue in line order', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const fair = lh.fairLock('payouts');
    const holder = await fair.acquire({ owner: 'h' });
    const ac = new AbortController();
    const w1 = fair.acquire({ owner: 'w1', signal: ac.signal }).catch(() => undefined);
    await waitFor(async () => (await lh.inspect('payouts'))?.queued === 1);
    const w2 = fair.acquire({ owner: 'w2', signal: ac.signal }).catch(() => undefined);
    await waitFor(async () => (await lh.inspect('payouts'))?.queued === 2);
    const state = await lh.inspect('payouts');
    assert.equal(state?.primitive, 'fair');
    assert.equal(state?.holders[0]?.owner, 'h');
    assert.equal(state?.holders[0]?.fencingToken, holder.fencingToken);
    assert.deepEqual(
      state?.waiters?.map((w) => w.owner),
      ['w1', 'w2'],
    );
    ac.abort();
    await Promise.all([w1, w2]);
    await holder.release();
  });

  test('an election: the leader, its value and term', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const term = await lh.election('scheduler').campaign('node-a', { owner: 'sched-1' });
    const state = await lh.inspect('scheduler');
    assert.equal(state?.primitive, 'election');
    assert.equal(state?.holders[0]?.owner, 'sched-1');
    assert.equal(state?.holders[0]?.value, 'node-a');
    assert.equal(state?.holders[0]?.fencingToken, term.fencingToken);
    await term.release();
  });

  test("a multiLock's waiters: listed on each of its names, gone when they get them or give up", async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const other = await instance(prefix, 3_000);
    const third = await instance(prefix, 3_000);
    const multis = async (name: string) =>
      (await lh.inspect(name, { primitive: 'mutex' }))?.waiters
        ?.filter((w) => w.role === 'multiLock')
        .map((w) => w.owner);
    const held = await lh.acquire('account:2', { owner: 'holder' });
    const before = Date.now();
    const transfer = other.multiLock(['account:1', 'account:2']).acquire({ owner: 'transfer' });
    // Recorded from its first attempt that finds a name held: on the free name too, which it wants.
    await waitFor(async () => (await multis('account:1'))?.join() === 'transfer');
    const ac = new AbortController();
    const audit = third
      .multiLock(['account:2', 'account:3'])
      .acquire({ owner: 'audit', signal: ac.signal })
      .catch((error: unknown) => error);
    await waitFor(async () => (await multis('account:2'))?.length === 2);
    const state = await lh.inspect('account:2', { primitive: 'mutex' });
    assert.equal(state?.holders[0]?.owner, 'holder');
    assert.deepEqual(
      state?.waiters?.map((w) => [w.owner, w.role]),
      [
        ['transfer', 'multiLock'],
        ['audit', 'multiLock'],
      ],
      'in the order they began to wait, after any mutex waiter',
    );
    assert.equal(state?.queued, 2);
    const [w] = state?.waiters ?? [];
    assert.ok(w?.since !== undefined && w.since >= before - 1 && w.since <= Date.now(), 'since');
    // A record lapses a TTL after the holder's would: only a dead waiter's does.
    assert.ok((w?.deadlineIn ?? 0) > 3_000, `lapses after the holder's TTL and its own (${w?.deadlineIn})`);
    // A free name that only a multiLock waits for is live: list() shows it.
    assert.ok((await lh.list()).some((i) => i.name === 'account:3' && i.waiters?.length === 1));
    // Giving up forgets it on every name at once.
    ac.abort();
    assert.ok((await audit) instanceof Error);
    await waitFor(async () => (await multis('account:2'))?.join() === 'transfer');
    assert.equal(await lh.inspect('account:3', { primitive: 'mutex' }), undefined);
    // Served: it holds both names and is no longer listed on either.
    await held.release();
    const both = await transfer;
    assert.deepEqual(await multis('account:1'), []);
    assert.deepEqual(await multis('account:2'), []);
    await both.release();
  });

  test("an election's candidates: listed while they wait, gone when elected or when they give up", async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    // Two candidates in two processes (instances): the waiters of one name in one process ask one
    // at a time, so the second of one process is recorded only when its turn to ask comes.
    const other = await instance(prefix, 3_000);
    const third = await instance(prefix, 3_000);
    const owners = async () => (await lh.inspect('scheduler'))?.waiters?.map((w) => w.owner);
    const term = await lh.election('scheduler').campaign('node-a', { owner: 'leader' });
    const before = Date.now();
    const first = other.election('scheduler').campaign('node-b', { owner: 'patient' });
    await waitFor(async () => (await owners())?.length === 1);
    const ac = new AbortController();
    const second = third
      .election('scheduler')
      .campaign('node-c', { owner: 'impatient', signal: ac.signal })
      .catch((error: unknown) => error);
    await waitFor(async () => (await owners())?.length === 2);
    const state = await lh.inspect('scheduler');
    assert.deepEqual(
      state?.waiters?.map((w) => w.owner),
      ['patient', 'impatient'],
      'in the order they began to wait',
    );
    assert.equal(state?.queued, 2);
    const [w] = state?.waiters ?? [];
    assert.ok(
      w?.since !== undefined && w.since >= before - 1 && w.since <= Date.now(),
      'since: when it began',
    );
    // A record lapses its own TTL after the leader's term would end: only a dead candidate's does.
    assert.ok((w?.deadlineIn ?? 0) > 3_000, `lapses after the term and a TTL (${w?.deadlineIn})`);
    // Giving up withdraws the record at once (not when it lapses).
    ac.abort();
    assert.ok((await second) instanceof Error);
    await waitFor(async () => (await owners())?.join() === 'patient');
    // Elected: no longer a candidate.
    await term.resign();
    const next = await first;
    await waitFor(async () => (await owners())?.length === 0);
    assert.equal((await lh.inspect('scheduler'))?.holders[0]?.owner, 'patient');
    await next.resign();
  });

  test('list(): SCAN under a name prefix, by primitive, bounded by limit', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    const leases = await Promise.all(
      ['cron:a', 'cron:b', 'cron:c', 'web:x'].map((n) => lh.acquire(n, { owner: `o-${n}` })),
    );
    const permit = await lh.semaphore('cron:sem', { limit: 2 }).acquire();
    const all = await lh.list({ prefix: 'cron:' });
    assert.deepEqual(
      all.map((e) => [e.name, e.primitive]),
      [
        ['cron:a', 'mutex'],
        ['cron:b', 'mutex'],
        ['cron:c', 'mutex'],
        ['cron:sem', 'semaphore'],
      ],
    );
    assert.equal(all[0]?.holders[0]?.owner, 'o-cron:a');
    assert.deepEqual(
      (await lh.list({ prefix: 'cron:', primitive: 'semaphore' })).map((e) => e.name),
      ['cron:sem'],
    );
    assert.equal((await lh.list({ prefix: 'cron:', limit: 2 })).length, 2);
    assert.equal((await lh.list()).length, 5);
    // Glob characters in a prefix are literal.
    assert.deepEqual(await lh.list({ prefix: 'cron:*' }), []);
    for (const l of leases) await l.release();
    await permit.release();
  });

  test('list() shows only live names: an idle name, whose fencing counter lives on, is left out', async () => {
    const prefix = uniquePrefix('in');
    const lh = await instance(prefix, 3_000);
    // Used once and let go: each leaves its fencing counter until it expires (IDLE_MS).
    for (let i = 0; i < 20; i++) await (await lh.acquire(`idle:${String(i).padStart(2, '0')}`)).release();
    await (await lh.semaphore('idle:sem', { limit: 1 }).acquire()).release();
    await (await lh.readWriteLock('idle:rw').write()).release();
    await (await lh.fairLock('idle:fair').acquire()).release();
    await (await lh.election('idle:vote').campaign('x')).resign();
    const live = await lh.acquire('idle:zz');
    // inspect() of one name still answers with its last token.
    assert.deepEqual((await lh.inspect('idle:00'))?.holders, []);
    assert.deepEqual(
      (await lh.list({ prefix: 'idle:' })).map((e) => e.name),
      ['idle:zz'],
    );
    // Idle names do not count towards the limit (they sort first: they used to fill it).
    assert.deepEqual(
      (await lh.list({ prefix: 'idle:', limit: 1 })).map((e) => e.name),
      ['idle:zz'],
    );
    await live.release();
    assert.deepEqual(await lh.list({ prefix: 'idle:' }), []);
  });

  test('bad options are TypeErrors naming the option', async () => {
    const lh = await instance(uniquePrefix('in'));
    await assert.rejects(lh.acquire('x', { owner: '' }), /option "owner" must be a non-empty string/);
    await assert.rejects(
      lh.acquire('x', { owner: 'o'.repeat(201) }),
      /option "owner" must be .* at most 200/,
    );
    await assert.rejects(lh.acquire('x', { owner: 'a\nb' }), /option "owner" must be free of control/);
    await assert.rejects(
      Leasehold.connect({ url: redis.server.url, driver: testDriver, owner: 42 as unknown as string }),
      TypeError,
    );
    await assert.rejects(lh.list({ primitive: 'queue' as 'mutex' }), /option "primitive"/);
    await assert.rejects(lh.list({ limit: 0 }), /option "limit"/);
    await assert.rejects(lh.inspect('x', { nope: 1 } as object), /unknown option "nope"/);
  });
});

/** Polls an inspection until `check` holds (no event says when Redis shows a change). */
const waitFor = (check: () => Promise<boolean>, ms = 2_000) =>
  until('the inspection to show it', check, { timeout: ms, interval: 10 });
