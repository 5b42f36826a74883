// PostgreSQL: a waiter whose LISTEN connection died silently (a NAT or firewall dropped the flow;
// finding 2 of issue 38). Its session lives on in the server with its presence lock, so releases
// go on granting to it; the claim window (docs/direct-grants.md) hands the name on within half a
// second, and the listener's heartbeat (src/postgres/listener.ts) makes the instance say it polls
// within HEARTBEAT plus commandTimeout, reconnect, and end the dead session. Before, another
// waiter got the name only at the stranded waiter's TTL, and the instance went on reporting
// notifications: 'tracking'. The LISTEN connection alone goes through a black-holing proxy.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Leasehold } from '../../src/index.ts';
import { HEARTBEAT } from '../../src/postgres/listener.ts';
import { uniquePrefix } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { KINDS, listed, take } from '../harness/strands.ts';

const TTL = 6_000;
const BOUND = 2_000;
const COMMAND_TIMEOUT = 1_000;

describe('postgres: a dead LISTEN connection never strands a released name', { concurrency: 1 }, () => {
  let db: PgDatabase;
  const open: Leasehold[] = [];
  before(async () => {
    db = await PgDatabase.create();
  });
  after(async () => {
    await Promise.all(open.map((lh) => lh.close()));
    await db.drop();
  });
  const connect = async (prefix: string, owner: string, listenUrl?: string) => {
    const postgres = listenUrl === undefined ? db.url : { url: db.url, listenUrl };
    const lh = await Leasehold.connect({
      postgres,
      prefix,
      ttl: TTL,
      owner,
      commandTimeout: COMMAND_TIMEOUT,
    });
    open.push(lh);
    return lh;
  };

  for (const kind of KINDS) {
    test(`${kind}: the grant to the deaf waiter lapses; the instance polls, reconnects and hears again`, async () => {
      const prefix = uniquePrefix('pgstrand');
      const proxy = await FaultProxy.start(5432);
      try {
        const url = new URL(db.url);
        url.port = String(proxy.port);
        const holder = await connect(prefix, 'holder');
        const healthy = await connect(prefix, 'healthy');
        const deaf = await connect(prefix, 'deaf', url.toString());
        assert.equal(deaf.notifications, 'tracking');
        const held = await take(holder, kind, 'job', 1_000);
        const stranded = take(deaf, kind, 'job', 30_000).catch(() => undefined);
        await listed(holder, 'job', 'deaf');
        proxy.blackhole(true);
        const waiting = take(healthy, kind, 'job', 20_000);
        await listed(holder, 'job', 'healthy');
        const released = performance.now();
        await held.release();
        const lease = await waiting;
        const waited = performance.now() - released;
        assert.ok(waited < BOUND, `the live waiter waited ${Math.round(waited)} ms (bound ${BOUND} ms)`);
        await until('the deaf instance to notice and poll', async () => deaf.notifications === 'polling', {
          timeout: HEARTBEAT + 2 * COMMAND_TIMEOUT + 1_000,
          interval: 20,
        });
        proxy.blackhole(false);
        await until('the deaf instance to listen again', async () => deaf.notifications === 'tracking', {
          timeout: 10_000,
          interval: 20,
        });
        await lease.release();
        const late = await stranded;
        assert.ok(late !== undefined, 'the deaf waiter gets the name once it hears again');
        await late.release();
      } finally {
        proxy.blackhole(false);
        await proxy.stop();
      }
    });
  }
});
