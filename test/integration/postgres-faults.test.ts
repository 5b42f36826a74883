// PostgreSQL under the faults a production user meets (docs/postgres.md, "Faults"): a connection
// reset, a black-holed network, a peer that stops between its two round trips, a server that
// crashes and restarts, a standby, PgBouncer in transaction mode, and client clocks that are off.
// The machine's server on 5432 is reached through a FaultProxy; the crash, the standby and
// PgBouncer use servers of the test's own (test/harness/pg-server.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  ConnectError,
  type ConnectOptions,
  Leasehold,
  LockLostError,
  RedisUnavailableError,
} from '../../src/index.ts';
import { pgNames } from '../../src/postgres/names.ts';
import { openAndRead } from '../../src/postgres/sql.ts';
import { REGISTRY } from '../../src/primitives/registry.ts';
import { aborted, uniquePrefix, within } from '../harness/leasehold.ts';
import { PgBouncer, PgServer, pgServerMissing } from '../harness/pg-server.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { FaultProxy } from '../harness/proxy.ts';

const names = pgNames('leasehold', 'leasehold_keys');

/** A URL to `db` through `proxy`. */
const through = (proxy: FaultProxy, db: PgDatabase): string => {
  const url = new URL(db.url);
  url.port = String(proxy.port);
  return url.toString();
};

describe('postgres faults (machine server through a proxy)', { concurrency: 1 }, () => {
  let db: PgDatabase;
  const open: Leasehold[] = [];
  const proxies: FaultProxy[] = [];
  before(async () => {
    db = await PgDatabase.create();
  });
  after(async () => {
    await Promise.all(open.map((lh) => lh.close()));
    await Promise.all(proxies.map((p) => p.stop()));
    await db.drop();
  });
  const proxied = async (options: ConnectOptions = {}) => {
    const proxy = await FaultProxy.start(5432);
    proxies.push(proxy);
    const prefix = options.prefix ?? uniquePrefix('pgf');
    const lh = await Leasehold.connect({ postgres: through(proxy, db), prefix, ...options });
    open.push(lh);
    return { lh, proxy, prefix };
  };

  test('a reset connection aborts the holder at once (onDisconnect abort), and the instance recovers', async () => {
    const { lh, proxy } = await proxied({ ttl: 10_000 });
    assert.equal(lh.notifications, 'tracking');
    const lease = await lh.acquire('job');
    const started = performance.now();
    proxy.resetAll();
    const reason = await within(aborted(lease.signal), 2_000, 'abort after a reset');
    assert.ok(reason instanceof LockLostError, String(reason));
    assert.ok(performance.now() - started < 1_000, 'aborted by the dropped listener, not by validity');
    // The listener reconnects, the canary proves it again, and locks are granted as before.
    const again = await within(lh.acquire('job', { timeout: 5_000 }), 6_000, 're-acquire');
    assert.ok(again.fencingToken > lease.fencingToken);
    await within(
      (async () => {
        while (lh.notifications !== 'tracking') await sleep(20);
      })(),
      5_000,
      'tracking again',
    );
    await again.release();
  });

  test("onDisconnect 'reverify' keeps a lease across a reset when its row still holds its token", async () => {
    const { lh, proxy } = await proxied({ ttl: 5_000, onDisconnect: 'reverify' });
    const lease = await lh.acquire('job');
    proxy.resetAll();
    await sleep(1_500); // listener reconnects (backoff from 50 ms), re-verification runs
    assert.equal(lease.signal.aborted, false);
    assert.equal(await lease.release(), true);
  });

  test('black-holed network: every call settles within commandTimeout, the holder aborts by validity, all works after healing', async () => {
    const { lh, proxy } = await proxied({ ttl: 1_500, commandTimeout: 400 });
    const { lh: other } = await proxied({ ttl: 1_500, commandTimeout: 400 });
    const lease = await lh.acquire('job');
    proxy.blackhole(true);
    const started = performance.now();
    await assert.rejects(lh.tryAcquire('other'), (error: unknown) => {
      assert.ok(error instanceof RedisUnavailableError, String(error));
      // It speaks of the server it runs on.
      assert.match(error.message, /PostgreSQL did not answer/);
      return true;
    });
    const took = performance.now() - started;
    assert.ok(took < 1_200, `tryAcquire settled after ${took.toFixed(0)} ms`);
    const reason = await within(aborted(lease.signal), 3_000, 'abort by validity');
    assert.ok(reason instanceof LockLostError);
    assert.ok(performance.now() - started < 1_600, 'aborted before the row could expire');
    // The other instance (its own path) takes the lock once the row has expired.
    const taken = await within(other.acquire('job', { timeout: 5_000 }), 6_000, 'taken after expiry');
    assert.ok(taken.fencingToken > lease.fencingToken);
    proxy.blackhole(false);
    await taken.release();
    const back = await within(lh.acquire('job', { timeout: 5_000 }), 6_000, 'acquire after healing');
    await back.release();
  });

  test('a peer stopped between its two round trips blocks its keys for at most half the commandTimeout', async () => {
    const { lh, prefix } = await proxied({ ttl: 5_000, commandTimeout: 1_000 });
    // A raw client opens a transaction on the lock's keys (locks taken) and never sends the second.
    const stuck = new pg.Client({ connectionString: db.url });
    stuck.on('error', () => {});
    await stuck.connect();
    const keys = Object.values(REGISTRY.mutex.layout.keys(prefix, 'job'));
    await stuck.query(openAndRead(names, keys, 1_000));
    const started = performance.now();
    const lease = await lh.acquire('job', { timeout: 5_000 });
    const waited = performance.now() - started;
    assert.ok(waited >= 300, `waited ${waited.toFixed(0)} ms: the stuck transaction held the keys`);
    assert.ok(waited < 1_000, `waited ${waited.toFixed(0)} ms: the server cut the stuck session at 500 ms`);
    await lease.release();
    await stuck.end().catch(() => {});
  });

  test('a caller that stalls between its round trips past the server-side bound meets an outage, not a refusal', async () => {
    // Its own event loop blocked (a GC pause, a starved CPU) after the first round trip: the server
    // ends the session at half the commandTimeout (25P03), and that FATAL is the COMMIT's reply.
    // The transaction rolled back, so a waiting acquire tries again on a new connection. The
    // stall (1.3 s) is past the server's bound (1 s) and leaves the call 0.7 s of its 2 s for the
    // first round trip, a new connection's set-up included, on a slow host.
    const { lh } = await proxied({ ttl: 5_000, commandTimeout: 2_000 });
    const query = pg.Client.prototype.query;
    let stalls = 0;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      // The COMMIT of a write to this test's lock (no other call of the instance's).
      const text = args[0];
      if (stalls > 0 && typeof text === 'string' && text.endsWith('COMMIT') && text.includes(':{job}')) {
        stalls--;
        const until = performance.now() + 1_300;
        while (performance.now() < until); // the event loop, not a timer: nothing is read meanwhile
      }
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      stalls = 1;
      await assert.rejects(lh.tryAcquire('job'), (error: unknown) => {
        assert.ok(error instanceof RedisUnavailableError, String(error));
        assert.match(
          error.message,
          /PostgreSQL did not answer \(terminating connection due to idle-in-transaction/,
        );
        return true;
      });
      stalls = 1;
      const lease = await within(lh.acquire('job', { timeout: 10_000 }), 12_000, 'a waiting acquire');
      assert.equal(stalls, 0, 'the second stall ran');
      assert.equal(await lh.tryAcquire('job'), undefined, 'the lease it got is held');
      await lease.release();
    } finally {
      pg.Client.prototype.query = query;
    }
  });

  test('a direct grant never goes to a waiter whose connection died: the lock is free for the next', async () => {
    const { lh: holder, prefix } = await proxied({ ttl: 10_000 });
    const { lh: doomed, proxy } = await proxied({ ttl: 10_000, prefix });
    const { lh: next } = await proxied({ ttl: 10_000, prefix });
    const held = await holder.acquire('job');
    const waiting = doomed.acquire('job', { timeout: 20_000 }).catch((error: unknown) => error);
    // Registered for a grant: listed as a waiter (its subscription is up, its record written).
    await within(
      (async () => {
        while (((await holder.inspect('job'))?.waiters?.length ?? 0) === 0) await sleep(10);
      })(),
      5_000,
      'the waiter registered',
    );
    await proxy.cut(true); // its process is as good as gone: no connection, no listener
    await held.release();
    const mine = await next.tryAcquire('job');
    assert.ok(mine !== undefined, 'the release did not grant the lock to the dead waiter');
    await mine.release();
    await proxy.cut(false);
    await waiting;
  });

  test("client clocks an hour apart: exclusion and handoff run on the server's clock and the local monotonic one", async () => {
    const realNow = Date.now;
    const { lh: ahead, prefix } = await proxied({ ttl: 800 });
    const { lh: behind } = await proxied({ ttl: 800, prefix });
    try {
      Date.now = () => realNow() + 3_600_000;
      const lease = await ahead.acquire('job');
      Date.now = () => realNow() - 3_600_000;
      assert.equal(await behind.tryAcquire('job'), undefined);
      const waiting = behind.acquire('job', { timeout: 5_000 });
      Date.now = realNow;
      await sleep(100);
      await lease.release();
      const next = await within(waiting, 2_000, 'handoff');
      assert.ok(next.fencingToken > lease.fencingToken);
      await next.release();
    } finally {
      Date.now = realNow;
    }
  });
});

describe('postgres faults (servers of the test own)', { concurrency: 1, skip: pgServerMissing() }, () => {
  test('a crash and restart: the listener comes back, every lease on the server is lost, fencing tokens keep rising', async () => {
    const server = await PgServer.start();
    const lh = await Leasehold.connect({ postgres: server.url(), ttl: 10_000, onDisconnect: 'reverify' });
    try {
      const lease = await lh.acquire('job');
      await server.restart();
      const reason = await within(aborted(lease.signal), 15_000, 'lease lost with the restart');
      assert.ok(reason instanceof LockLostError);
      assert.match(String((reason as Error).message), /restart/i);
      const next = await within(lh.acquire('job', { timeout: 10_000 }), 12_000, 'acquire after restart');
      assert.ok(next.fencingToken > lease.fencingToken);
      await next.release();
    } finally {
      await lh.close();
      await server.stop();
    }
  });

  test('fencing tokens handed out just before a crash are never issued again (their counter is flushed)', async () => {
    const server = await PgServer.start();
    const lh = await Leasehold.connect({ postgres: server.url(), ttl: 10_000 });
    let highest = 0n;
    try {
      // Quick acquisitions, then a crash at once: without the flush the WAL writer (every 200 ms)
      // has not written the last increments, and the counter comes back lower.
      for (let i = 0; i < 40; i++) {
        const lease = await lh.acquire('job');
        if (lease.fencingToken > highest) highest = lease.fencingToken;
        await lease.release();
      }
      await server.restart();
    } finally {
      await lh.close();
    }
    const after = await Leasehold.connect({ postgres: server.url(), ttl: 10_000 });
    try {
      const next = await after.acquire('job');
      assert.ok(next.fencingToken > highest, `${next.fencingToken} > ${highest}`);
      await next.release();
    } finally {
      await after.close();
      await server.stop();
    }
  });

  test('a standby is refused with a ConnectError that says so', async () => {
    const standby = await PgServer.start({ standby: true });
    try {
      await assert.rejects(Leasehold.connect({ postgres: standby.url('postgres') }), (error: unknown) => {
        assert.ok(error instanceof ConnectError);
        assert.match(error.message, /standby/);
        return true;
      });
    } finally {
      await standby.stop();
    }
  });

  test('through PgBouncer in transaction mode, with LISTEN on a direct connection', {
    skip: PgBouncer.missing(),
  }, async () => {
    const db = await PgDatabase.create();
    const bouncer = await PgBouncer.start(5432);
    const url = new URL(db.url);
    const options = (): ConnectOptions => ({
      postgres: { url: bouncer.url(db.name), listenUrl: url.toString() },
      ttl: 2_000,
    });
    const a = await Leasehold.connect(options());
    const b = await Leasehold.connect(options());
    try {
      assert.equal(a.notifications, 'tracking');
      const lease = await a.acquire('job');
      const waiting = b.acquire('job', { timeout: 5_000 });
      await sleep(50);
      await lease.release();
      const next = await within(waiting, 2_000, 'handoff through PgBouncer');
      assert.ok(next.fencingToken > lease.fencingToken);
      const taken = await a.forceAcquire('job');
      await within(aborted(next.signal), 1_000, 'takeover heard');
      await taken.release();
    } finally {
      await a.close();
      await b.close();
      await bouncer.stop();
      await db.drop();
    }
  });
});
