// When a holder got its lease, beside when it asked (issue 41, item 4): a holder that waited
// notes the moment it got the lease (src/scripts/note-granted.lua); inspection, `leasehold
// status`, `top` and the dashboard show it. On every primitive, on one Redis in this run's mode;
// the memory backend and a quorum of masters at the end.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Inspection, type Lease, Leasehold, MemoryBackend } from '../../src/index.ts';
import { leasehold } from '../harness/cli.ts';
import {
  lockKey,
  mode,
  testDriver,
  testNotifications,
  uniquePrefix,
  useRedis,
} from '../harness/leasehold.ts';
import { type Masters, startMasters } from '../harness/masters.ts';
import { until } from '../harness/poll.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
/** How long each waiter waits before the holder lets go: far above any round trip here. */
const WAIT = 300;

/**
 * Holds with `first`, starts `second` (which waits), lets go after WAIT and checks what
 * inspection says of the new holder: it asked before the wait and got the lease after it.
 */
async function waited(
  lh: Leasehold,
  name: string,
  first: () => Promise<{ release(): Promise<unknown> }>,
  second: () => Promise<Lease>,
  read: (i: Inspection | undefined) => Inspection['holders'][number] | undefined = (i) => i?.holders[0],
): Promise<Lease> {
  const held = await first();
  const asked = Date.now();
  const next = second();
  await sleep(WAIT);
  const freed = Date.now();
  await held.release();
  const lease = await next;
  // The note goes out NOTE_DELAY (50 ms) after the grant, if the holder still holds it.
  const h = await until(
    `${name}: the note`,
    async () => {
      const seen = read(await lh.inspect(name));
      return seen?.grantedAt !== seen?.since && seen;
    },
    { timeout: 2_000, interval: 10 },
  );
  assert.equal(h?.token, lease.token, `${name}: the new holder`);
  assert.ok(h?.since !== undefined && h.since >= asked - 1 && h.since < freed, `${name}: since ${h?.since}`);
  assert.ok(
    h.grantedAt !== undefined && h.grantedAt >= freed,
    `${name}: granted ${h.grantedAt} after ${freed}`,
  );
  assert.ok(h.grantedAt - h.since >= WAIT - 5, `${name}: waited ${h.grantedAt - h.since} ms`);
  return lease;
}

/** `waited` on a mutex between two instances from `connect`, both closed after. */
async function mutexOn(connect: () => Promise<Leasehold>, name: string): Promise<void> {
  const [lh, other] = await Promise.all([connect(), connect()]);
  try {
    const lease = await waited(
      lh,
      name,
      () => lh.acquire(name),
      () => other.acquire(name, { owner: 'b' }),
    );
    await lease.release();
  } finally {
    await Promise.all([lh.close(), other.close()]);
  }
}

describe(`when a holder got its lease (${mode})`, () => {
  test('a holder whose first attempt got it: granted when it asked, and no note written', async () => {
    const prefix = uniquePrefix('gr');
    const lh = await redis.instance(prefix, 5_000);
    const lease = await lh.acquire('at-once', { owner: 'quick' });
    const [h] = (await lh.inspect('at-once'))?.holders ?? [];
    assert.equal(h?.grantedAt, h?.since);
    assert.equal(await command(redis.server.port, ['EXISTS', `${lockKey(prefix, 'at-once')}:granted`]), 0);
    await lease.release();
  });

  test('a holder that waited and let go within 50 ms writes no note', async () => {
    const prefix = uniquePrefix('gr');
    const lh = await redis.instance(prefix, 5_000);
    const other = await redis.instance(prefix, 5_000);
    const held = await lh.acquire('brief');
    const next = other.acquire('brief', { owner: 'b' });
    await sleep(50);
    await held.release();
    await (await next).release();
    await sleep(150);
    assert.equal(await command(redis.server.port, ['EXISTS', `${lockKey(prefix, 'brief')}:granted`]), 0);
  });

  test('every primitive: a holder that waited says when it asked and when it got the lease', async () => {
    const prefix = uniquePrefix('gr');
    const lh = await redis.instance(prefix, 5_000);
    const other = await redis.instance(prefix, 5_000);
    const leases = [
      await waited(
        lh,
        'mutex',
        () => lh.acquire('mutex'),
        () => other.acquire('mutex', { owner: 'b' }),
      ),
      await waited(
        lh,
        'sem',
        () => lh.semaphore('sem', { limit: 1 }).acquire(),
        () => other.semaphore('sem', { limit: 1 }).acquire({ owner: 'b' }),
      ),
      await waited(
        lh,
        'fair',
        () => lh.fairLock('fair').acquire(),
        () => other.fairLock('fair').acquire({ owner: 'b' }),
      ),
      await waited(
        lh,
        'rw',
        () => lh.readWriteLock('rw').write(),
        () => other.readWriteLock('rw').read({ owner: 'reader' }),
      ),
      await waited(
        lh,
        'vote',
        () =>
          lh
            .election('vote')
            .campaign('a')
            .then((term) => ({ release: () => term.resign() })),
        () => other.election('vote').campaign('b', { owner: 'b' }),
      ),
      // A multiLock's holder is listed under each of its names' mutexes.
      await waited(
        lh,
        'x',
        () => lh.acquire('x'),
        () => other.multiLock(['x', 'y']).acquire({ owner: 'both' }),
      ),
    ];
    const y = (await lh.inspect('y'))?.holders[0];
    assert.ok(y?.grantedAt !== undefined && y.since !== undefined && y.grantedAt - y.since >= WAIT - 5);
    await Promise.all(leases.map((l) => l.release()));
  });

  test('the note lives as long as its lease renews, and a ttl past its end', async () => {
    const prefix = uniquePrefix('gr');
    // Long enough that a stalled CI machine's renewals keep the lease (release-race.test.ts).
    const ttl = 1_500;
    const lh = await redis.instance(prefix, ttl);
    const other = await redis.instance(prefix, ttl);
    const lease = await waited(
      lh,
      'long',
      () => lh.acquire('long'),
      () => other.acquire('long', { owner: 'b' }),
    );
    // Three TTLs later, renewed all along: still noted (a note lapses a TTL after it was sent).
    await sleep(3 * ttl);
    const [h] = (await lh.inspect('long'))?.holders ?? [];
    assert.ok(h?.grantedAt !== undefined && h.since !== undefined && h.grantedAt - h.since >= WAIT - 5);
    const notes = `${lockKey(prefix, 'long')}:granted`;
    const pttl = Number(await command(redis.server.port, ['PTTL', notes]));
    assert.ok(pttl > 0 && pttl <= ttl, `the notes live a ttl at most: ${pttl}`);
    await lease.release();
    await sleep(ttl + 200);
    assert.equal(await command(redis.server.port, ['EXISTS', notes]), 0, 'gone a ttl after the release');
  });

  test('leasehold status says both, labelled', async () => {
    const prefix = uniquePrefix('gr');
    const lh = await redis.instance(prefix, 5_000);
    const other = await redis.instance(prefix, 5_000);
    const lease = await waited(
      lh,
      'job',
      () => lh.acquire('job'),
      () => other.acquire('job', { owner: 'beta' }),
    );
    const args = ['status', 'job', '--redis', redis.server.url, '--prefix', prefix, '--driver', testDriver];
    const { code, stdout, stderr } = await leasehold(args);
    assert.equal(code, 0, stderr);
    assert.match(
      stdout,
      /holder +beta: fencing token \d+, [\d.]+ s left, granted \d{4}-[\d-]+T[\d:.]+Z \([\d.]+ m?s ago\), asked \d{4}-[\d-]+T[\d:.]+Z \([\d.]+ m?s ago\), token /,
    );
    await lease.release();
  });
});

describe('when a holder got its lease: the memory backend, PostgreSQL and a quorum', () => {
  let masters: Masters;
  let db: PgDatabase;
  before(async () => {
    [masters, db] = await Promise.all([startMasters(3), PgDatabase.create()]);
  });
  after(async () => {
    await Promise.all([masters?.stopAll(), db?.drop()]);
  });

  test('the memory backend notes it as Redis does', async () => {
    const backend = new MemoryBackend();
    await mutexOn(() => Leasehold.connect({ backend, ttl: 2_000 }), 'mem');
  });

  test('PostgreSQL notes it as Redis does', async () => {
    await mutexOn(() => Leasehold.connect({ postgres: db.url, ttl: 2_000 }), 'pg');
  });

  test('a quorum notes it on its nodes; inspection says it once', async () => {
    const options = {
      nodes: [...masters.urls],
      driver: testDriver,
      notifications: testNotifications,
      prefix: uniquePrefix('grq'),
      ttl: 3_000,
      retryDelay: 20,
    };
    await mutexOn(() => Leasehold.connect(options), 'q');
  });
});
