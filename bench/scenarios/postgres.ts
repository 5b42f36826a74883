// leasehold on PostgreSQL beside the two ways Node teams lock with PostgreSQL alone (a blocking
// session advisory lock, a polled pg_try_advisory_lock), on the machine's PostgreSQL
// (LEASEHOLD_BENCH_POSTGRES_URL names another maintenance database), in a database of its own
// made for the run and dropped after it. docs/postgres.md quotes the table.
//   handoff      the handoff scenario's loop in two worker processes, each holding `hold` ms, so
//                that at every release the other has been waiting that long
//   loss         a takeover while this process holds: leasehold's forceAcquire from another
//                instance; for the session locks, pg_terminate_backend of the holder's connection
//   idle         this process holds, `waiters` callers wait in a worker: the CPU time per second
//                of the server processes serving the database (/proc), the load of nothing changing
//   uncontended  acquire + release on free locks, 1 and 16 in flight, in a worker
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { pgContenders, type SessionHeld } from '../contenders/postgres.ts';
import type { Contender } from '../contenders/types.ts';
import { now, type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { PairsResult } from '../workers/protocol.ts';
import { type Context, guard } from './context.ts';
import { gaps, takeTurns } from './handoff.ts';

export interface PostgresRow {
  label?: string;
  handoff?: Summary;
  loss?: Summary;
  /** Server CPU, ms per second. */
  idleCpu?: number;
  /** Pairs per second, by acquisitions in flight. */
  uncontended?: Record<number, number>;
}

export interface PostgresResult {
  server: string;
  settings: Record<string, number>;
  contenders: Record<string, PostgresRow>;
}

const TTL = 10_000;

async function handoff(ctx: Context, c: Contender, url: string): Promise<Summary> {
  const cfg = ctx.config.postgres;
  const workers = await Promise.all([0, 1].map((i) => Worker.spawn(800 + i)));
  try {
    await Promise.all(workers.map((w) => w.call({ cmd: 'init', contender: c.id, url })));
    const name = `handoff-${randomBytes(4).toString('hex')}`;
    const request = { contender: c.id, name, ttl: TTL, hold: cfg.hold };
    const { events, started, stopped } = await takeTurns(workers, request, cfg.handoffMs);
    return gaps(events, started + cfg.hold * 3, stopped);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
}

async function loss(ctx: Context, c: Contender, url: string, admin: pg.Client): Promise<Summary> {
  const holder = await c.connect(url);
  const taker = await c.connect(url);
  const delays: number[] = [];
  try {
    for (let i = 0; i < ctx.config.postgres.lossSamples + 3; i++) {
      const name = `loss-${randomBytes(4).toString('hex')}`;
      const lease = await holder.acquire(name, { ttl: TTL });
      await sleep(20);
      const lost = new Promise<number>((resolve) =>
        lease.signal.addEventListener('abort', () => resolve(now())),
      );
      const sent = now();
      const taken = taker.forceAcquire
        ? await taker.forceAcquire(name, TTL)
        : void (await admin.query('SELECT pg_terminate_backend($1)', [(lease as SessionHeld).backend]));
      const at = await lost;
      if (i >= 3) delays.push(at - sent); // the first few warm the code up
      await lease.release().catch(() => {});
      await taken?.release();
    }
  } finally {
    await holder.close();
    await taker.close();
  }
  return summarize(delays);
}

/** CPU time (ms) the server processes serving `db` have used (pg_stat_activity's pids, /proc). */
async function serverCpu(admin: pg.Client, db: string): Promise<number> {
  const { rows } = await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [db]);
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
    } catch {
      // exited meanwhile
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

async function idle(ctx: Context, c: Contender, url: string, admin: pg.Client, db: string): Promise<number> {
  const cfg = ctx.config.postgres;
  const holder = await c.connect(url);
  const worker = await Worker.spawn(810);
  try {
    const name = `idle-${randomBytes(4).toString('hex')}`;
    const lease = await holder.acquire(name, { ttl: TTL });
    await worker.call({ cmd: 'init', contender: c.id, url });
    const waiting = worker.wait(c.id, Array<string>(cfg.waiters).fill(name), TTL, 'idle');
    await sleep(1_000); // the waiters settle into their waits
    const before = await serverCpu(admin, db);
    const started = now();
    await sleep(cfg.idleMs);
    const perSecond = ((await serverCpu(admin, db)) - before) / ((now() - started) / 1_000);
    worker.notify({ notice: 'abort', tag: 'idle' });
    await waiting;
    await lease.release();
    return perSecond;
  } finally {
    await worker.stop();
    await holder.close();
  }
}

async function uncontended(ctx: Context, c: Contender, url: string): Promise<Record<number, number>> {
  const worker = await Worker.spawn(820);
  const rates: Record<number, number> = {};
  try {
    await worker.call({ cmd: 'init', contender: c.id, url });
    for (const lanes of [1, 16]) {
      const tag = `u-${randomBytes(4).toString('hex')}`;
      const ms = ctx.config.postgres.uncontendedMs;
      const r = await worker.call<PairsResult>({
        cmd: 'pairs',
        contender: c.id,
        lanes,
        ttl: TTL,
        tag,
        warmupMs: 300,
        ms,
      });
      rates[lanes] = r.pairs / r.seconds;
    }
  } finally {
    await worker.stop();
  }
  return rates;
}

export async function postgres(ctx: Context): Promise<PostgresResult> {
  const adminUrl =
    process.env['LEASEHOLD_BENCH_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const db = `leasehold_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${db}"`);
  const target = new URL(adminUrl);
  target.pathname = `/${db}`;
  const url = target.toString();
  const result: PostgresResult = {
    server: `PostgreSQL ${(await admin.query('SHOW server_version')).rows[0].server_version}`,
    settings: { ...ctx.config.postgres, ttl: TTL },
    contenders: {},
  };
  try {
    // leasehold's table exists before anyone measures.
    await (await pgContenders[0]!.connect(url)).close();
    for (const c of pgContenders) {
      const row: PostgresRow = { label: (await c.info()).label };
      result.contenders[c.id] = row;
      const step = async <K extends keyof PostgresRow>(what: K, task: () => Promise<PostgresRow[K]>) => {
        const value = await guard(ctx, 'postgres', `${c.id} ${what}`, task);
        if (value === undefined) return;
        row[what] = value;
        const shown = typeof value === 'number' ? `${value.toFixed(1)} ms/s` : JSON.stringify(value);
        const summary = value as Summary;
        ctx.log(
          `  postgres ${c.id} ${what}: ${summary.p50 === undefined ? shown : `p50 ${summary.p50.toFixed(3)} ms, p99 ${summary.p99.toFixed(3)} ms (n ${summary.n})`}`,
        );
      };
      await step('handoff', () => handoff(ctx, c, url));
      await step('loss', () => loss(ctx, c, url, admin));
      await step('idleCpu', () => idle(ctx, c, url, admin, db));
      await step('uncontended', () => uncontended(ctx, c, url));
    }
  } finally {
    await admin.query(`DROP DATABASE "${db}" WITH (FORCE)`);
    await admin.end();
  }
  return result;
}
