// Fencing tokens never go back across the expiry of their counter, whatever the server's wall
// clock did meanwhile (issue 39; docs/safety.md, "Counters that expire"). The clock is really
// moved: an LD_PRELOAD shim (test/harness/fake-clock.ts) under a redis-server and a PostgreSQL
// server of this file's own, so TIME and clock_timestamp() read it, and so do their expiries.
// - The scripts, with the idle time cut to 200 ms (includes/idle.lua's line swapped, as in
//   fence-expiry.test.ts), on Redis: counters expire by themselves, and the clock is stepped back
//   by hours across an expiry, or forward and then back. Also a counter that counted past a
//   multiple of FENCE_STEP, a quorum's raised counter, and the bound: a fence mark lost.
// - Every primitive that hands out tokens, through the library (the real idle time), on Redis
//   and on PostgreSQL: a step forward by hours expires the counter at once (its expiry is on the
//   server's clock); after a step back, the counter lives on until the clock has caught up, so it
//   is expired by hand (PEXPIREAT 1 on Redis, expire_at = 1 on PostgreSQL), which is what its
//   expiry would do once the idle time has passed. And a release that hands a mutex, a
//   semaphore's permit, a write lease or a fair lock on to the next in line (a direct grant
//   draws its token in the release script) after such a step back.
// Before the fence marks, every step back here handed out a token hours below the last one.
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { fenceMark } from '../../src/base/fence-mark.ts';
import { type Lease, Leasehold, type Primitive } from '../../src/index.ts';
import { scriptSource } from '../../src/scripts/index.ts';
import { FakeClock } from '../harness/fake-clock.ts';
import { lockKey, testDriver, testNotifications, uniquePrefix } from '../harness/leasehold.ts';
import { PgServer, pgServerMissing } from '../harness/pg-server.ts';
import { until } from '../harness/poll.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

const HOUR = 3_600_000;
const SHORT_IDLE = 200;
/** includes/fence-mark.lua's FENCE_STEP. */
const STEP = Number(/^local FENCE_STEP = (\d+)$/m.exec(scriptSource('acquire'))?.[1]);

/** A script of src/scripts with the idle time cut to SHORT_IDLE. */
function shortIdle(name: string): string {
  const source = scriptSource(name);
  const swapped = source.replace(/^local IDLE_MS = \d+$/m, `local IDLE_MS = ${SHORT_IDLE}`);
  assert.notEqual(swapped, source, `${name} defines IDLE_MS`);
  return swapped;
}

/** One shim each: a redis-server reads its pid's file, PostgreSQL's backends the shared one. */
/**
 * Whether the script `name` takes a fence mark among its KEYS (after its counter). Scripts from
 * before issue 39 take none: run against them, this file shows their tokens going back.
 */
const withMark = (name: string, keys: string[], mark: string): string[] =>
  /^-- KEYS\[\d\]\s+fence mark/m.test(scriptSource(name)) ? [...keys, mark] : keys;

/**
 * Moves a server's wall clock by `wall` ms from true time. The shim reads its file at most once
 * a millisecond: 2 ms later, every clock read of the server sees the step.
 */
async function stepped(clock: FakeClock, wall: number, pid?: number): Promise<void> {
  clock.set({ wall }, pid);
  await sleep(2);
}

const redisClock = FakeClock.create();
const pgClock = FakeClock.create();
after(() => {
  redisClock?.remove();
  pgClock?.remove();
});

describe('the scripts, on a Redis whose wall clock steps (a 200 ms idle time)', {
  skip: redisClock === undefined ? FakeClock.unavailable : false,
}, () => {
  let server: RedisServer;
  const send = (args: (string | number)[]) => command(server.port, args);
  const step = (wall: number) => stepped(redisClock!, wall, server.pid);
  before(async () => {
    server = await RedisServer.start({ env: redisClock!.env });
  });
  after(async () => {
    await server?.stop();
  });

  const acquire = shortIdle('acquire');
  /** A name of its own: its lock, counter and fence mark, and one acquisition by acquire.lua. */
  function name() {
    const prefix = uniquePrefix('fc');
    const lock = lockKey(prefix, 'n');
    const keys = { lock, fence: `${lock}:fence`, mark: fenceMark(prefix, lock) };
    const declared = withMark('acquire', [keys.lock, keys.fence], keys.mark);
    const draw = async (): Promise<number> => {
      const reply = (await send(['EVAL', acquire, declared.length, ...declared, 'me', 10_000])) as [
        number,
        number,
      ];
      assert.equal(reply[0], 1, `${lock} was free`);
      await send(['DEL', lock]);
      return Number(reply[1]);
    };
    const gone = () =>
      until(`${keys.fence} to expire`, async () => (await send(['EXISTS', keys.fence])) === 0 || undefined, {
        timeout: 5_000,
        interval: 20,
      });
    return { ...keys, draw, gone };
  }

  test('back by two hours across an expiry: the re-seed is above the last token (issue 39)', async () => {
    await step(0);
    const n = name();
    const first = await n.draw();
    await n.gone();
    await step(-2 * HOUR);
    const second = await n.draw();
    assert.ok(second > first, `token ${second} after ${first}`);
  });

  test('forward by two hours, then back by three, across two expiries', async () => {
    await step(0);
    const n = name();
    const first = await n.draw();
    await step(2 * HOUR);
    const second = await n.draw(); // the step expired the counter: re-seeded two hours ahead
    assert.ok(second > first + 2 * HOUR * 1000 - 60_000_000, `re-seeded at ${second} after ${first}`);
    await n.gone();
    await step(-HOUR);
    const third = await n.draw();
    assert.ok(third > second, `token ${third} after ${second}`);
  });

  test('a counter that counted past a multiple of FENCE_STEP raised the mark there', async () => {
    await step(0);
    const n = name();
    const seed = await n.draw();
    // As if it had drawn up to the fourth multiple of FENCE_STEP above its seed, one by one (its
    // expiry kept): the next INCR reaches that multiple.
    const multiple = (Math.floor(seed / STEP) + 4) * STEP;
    await send(['SET', n.fence, String(multiple - 1), 'KEEPTTL']);
    assert.equal(await n.draw(), multiple);
    assert.equal(Number(await send(['GET', n.mark])), multiple + STEP);
    await n.gone();
    await step(-2 * HOUR);
    const next = await n.draw();
    assert.ok(next > multiple, `token ${next} after ${multiple}`);
  });

  for (const script of ['fence-raise', 'quorum-restore']) {
    test(`${script}: a counter raised to another node's token re-seeds above it after a step back`, async () => {
      await step(0);
      const n = name();
      await n.draw();
      // A token from a node whose clock runs an hour ahead.
      const ahead = (await n.draw()) + HOUR * 1000;
      const args = script === 'fence-raise' ? ['me', ahead] : ['me', 10_000, ahead];
      if (script === 'fence-raise') await send(['SET', n.lock, 'me', 'PX', 10_000]);
      const raise = shortIdle(script);
      const declared = withMark(script, [n.lock, n.fence], n.mark);
      assert.equal(await send(['EVAL', raise, declared.length, ...declared, ...args]), 1);
      await send(['DEL', n.lock]);
      // The raised counter lives until this clock passes the token: a step forward expires it.
      await step(2 * HOUR);
      await n.gone();
      await step(-2 * HOUR);
      const next = await n.draw();
      assert.ok(next > ahead, `token ${next} after the raised ${ahead}`);
    });
  }

  test('the bound: with its fence mark lost too, a re-seed rests on the clock alone', async () => {
    await step(0);
    const n = name();
    const first = await n.draw();
    await n.gone();
    await send(['DEL', n.mark]); // a restart without persistence, an eviction, a FLUSHALL
    await step(-2 * HOUR);
    const back = await n.draw();
    assert.ok(back < first, `a clock two hours back: ${back} is below ${first}, as docs/safety.md says`);
    await n.gone();
    await send(['DEL', n.mark]);
    await step(0);
    const caughtUp = await n.draw();
    assert.ok(caughtUp > first, `a clock past the old tokens: ${caughtUp} above ${first}`);
  });
});

/** One primitive: where its counters live (suffixes of the name's key), and one lease of it. */
type Take = [what: string, counters: string[], take: (lh: Leasehold, name: string) => Promise<Lease>];
const primitives: Take[] = [
  ['mutex', ['fence'], (lh, n) => lh.acquire(n)],
  ['forceAcquire', ['fence'], (lh, n) => lh.forceAcquire(n)],
  ['multiLock', ['fence'], (lh, n) => lh.multiLock([n, `${n}-2`]).acquire()],
  ['semaphore', ['sem:fence'], (lh, n) => lh.semaphore(n, { limit: 2 }).acquire()],
  ['read lease', ['rw:fence'], (lh, n) => lh.readWriteLock(n).read()],
  ['write lease', ['rw:fence'], (lh, n) => lh.readWriteLock(n).write()],
  ['fair lock', ['fair:fence'], (lh, n) => lh.fairLock(n).acquire()],
  ['election term', ['election:fence'], (lh, n) => lh.election(n).campaign('me')],
];

/** Primitives whose release hands the lock on to a waiter: the inspected primitive, the counter. */
const handedOn: [string, Primitive, string, (lh: Leasehold, name: string) => Promise<Lease>][] = [
  ['mutex', 'mutex', 'fence', (lh, n) => lh.acquire(n, { timeout: 10_000 })],
  [
    'semaphore',
    'semaphore',
    'sem:fence',
    (lh, n) => lh.semaphore(n, { limit: 1 }).acquire({ timeout: 10_000 }),
  ],
  ['write lease', 'rwlock', 'rw:fence', (lh, n) => lh.readWriteLock(n).write({ timeout: 10_000 })],
  ['fair lock', 'fair', 'fair:fence', (lh, n) => lh.fairLock(n).acquire({ timeout: 10_000 })],
];

/** A server whose clock steps, as the library-level tests need it. */
interface Stepped {
  connect(prefix: string): Promise<Leasehold>;
  step(wall: number): Promise<void>;
  /** Expires a key now, as its expiry does once its time has come. */
  expire(key: string): Promise<void>;
  exists(key: string): Promise<boolean>;
}

/**
 * For each primitive: a token; a step forward by two hours (the counter expires at once) and a
 * token above it; a step back by three hours, the counter expired, and a token above again.
 * For a multiLock, each name's own token increases.
 */
function everyPrimitive(server: () => Stepped): void {
  for (const [what, suffixes, take] of primitives) {
    test(what, async () => {
      const s = server();
      await s.step(0);
      const prefix = uniquePrefix('fc');
      const lh = await s.connect(prefix);
      const names = what === 'multiLock' ? ['n', 'n-2'] : ['n'];
      const counters = names.flatMap((name) =>
        suffixes.map((suffix) => `${lockKey(prefix, name)}:${suffix}`),
      );
      /** One lease, released at once: each name's token. */
      const tokens = async (): Promise<bigint[]> => {
        const lease = await take(lh, 'n');
        await lease.release();
        const perName = (lease as Lease & { fencingTokens?: Map<string, bigint> }).fencingTokens;
        return perName === undefined ? [lease.fencingToken] : names.map((name) => perName.get(name)!);
      };
      const above = (later: bigint[], earlier: bigint[], when: string) => {
        for (const [i, token] of later.entries())
          assert.ok(token > earlier[i]!, `${what}, ${when}: token ${token} after ${earlier[i]}`);
      };
      try {
        const first = await tokens();
        await s.step(2 * HOUR);
        for (const counter of counters) assert.equal(await s.exists(counter), false, `${counter} expired`);
        const second = await tokens();
        above(second, first, 'two hours forward');
        await s.step(-HOUR);
        for (const counter of counters) await s.expire(counter);
        const third = await tokens();
        above(third, second, 'then three hours back');
      } finally {
        await s.step(0);
        await lh.close();
      }
    });
  }
  for (const [what, primitive, suffix, take] of handedOn) {
    test(`${what}: a release hands the next in line a token above the holder's, its counter re-seeded after a step back`, async () => {
      const s = server();
      await s.step(0);
      const prefix = uniquePrefix('fc');
      const [a, b] = await Promise.all([s.connect(prefix), s.connect(prefix)]);
      try {
        const held = await take(a, 'g');
        const next = take(b, 'g');
        await until(
          'the waiter in line',
          async () => ((await a.inspect('g', { primitive }))?.queued ?? 0) > 0 || undefined,
          {
            timeout: 5_000,
            interval: 10,
          },
        );
        // With direct grants (tracking), the release draws the waiter's token (includes/grant*.lua).
        await s.expire(`${lockKey(prefix, 'g')}:${suffix}`);
        await s.step(-2 * HOUR);
        await held.release();
        const lease = await next;
        await lease.release();
        assert.ok(
          lease.fencingToken > held.fencingToken,
          `${what}: ${lease.fencingToken} after ${held.fencingToken}`,
        );
      } finally {
        await s.step(0);
        await Promise.all([a.close(), b.close()]);
      }
    });
  }
}

describe('every primitive, on a Redis whose wall clock steps', {
  skip: redisClock === undefined ? FakeClock.unavailable : false,
}, () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start({ env: redisClock!.env });
  });
  after(async () => {
    await server?.stop();
  });
  everyPrimitive(() => ({
    connect: (prefix) =>
      Leasehold.connect({
        url: server.url,
        driver: testDriver,
        notifications: testNotifications,
        prefix,
        ttl: 2_000,
      }),
    step: (wall) => stepped(redisClock!, wall, server.pid),
    expire: async (key) => {
      await command(server.port, ['PEXPIREAT', key, 1]);
    },
    exists: async (key) => (await command(server.port, ['EXISTS', key])) === 1,
  }));
});

const noPostgres = pgClock === undefined ? FakeClock.unavailable : pgServerMissing();

describe('every primitive, on a PostgreSQL server whose wall clock steps', {
  skip: noPostgres ?? false,
}, () => {
  let server: PgServer;
  let client: pg.Client;
  const table = '"leasehold"."leasehold_keys"';
  before(async () => {
    // The server runs as the postgres user: the shim's directory must be readable to it.
    chmodSync(pgClock!.dir, 0o755);
    server = await PgServer.start({ env: pgClock!.env });
    client = new pg.Client({ connectionString: server.url() });
    await client.connect();
  });
  after(async () => {
    await client?.end();
    await server?.stop();
  });

  test('the shim moves clock_timestamp(), in every backend', async () => {
    const read = async () =>
      Number((await client.query('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms')).rows[0].ms);
    pgClock!.set({ wall: -2 * HOUR });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const stepped = await read();
    pgClock!.set({ wall: 0 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const back = await read();
    assert.ok(back - stepped > 2 * HOUR - 60_000, `clock_timestamp() moved by ${back - stepped} ms`);
  });

  everyPrimitive(() => ({
    connect: (prefix) => Leasehold.connect({ postgres: server.url(), prefix, ttl: 2_000 }),
    // Every backend is forked, with a pid of its own: the file for all of them.
    step: (wall) => stepped(pgClock!, wall),
    expire: async (key) => {
      await client.query(`UPDATE ${table} SET expire_at = 1 WHERE key = $1`, [key]);
    },
    exists: async (key) =>
      (
        await client.query(
          `SELECT 1 FROM ${table} WHERE key = $1 AND (expire_at IS NULL OR expire_at > floor(extract(epoch FROM clock_timestamp()) * 1000))`,
          [key],
        )
      ).rowCount === 1,
  }));
});
