// `npm run bench:postgres`: leasehold on PostgreSQL beside the two ways Node teams lock with
// PostgreSQL alone (a blocking session advisory lock, a polled pg_try_advisory_lock), in one run,
// on the machine's PostgreSQL (LEASEHOLD_BENCH_POSTGRES_URL names another maintenance database).
// `npm run bench` runs it too, after the Redis scenarios, and docs/postgres.md carries its table.
//
//   node --import tsx bench/postgres.ts [--samples=200] [--only=handoff,loss,idle,uncontended] [--json=file]
//
// - handoff: a holder in one process releases, the waiter in another (asleep in its wait for
//   50 ms) holds: release sent -> acquire returned, on one clock (performance.timeOrigin + now).
// - loss: a takeover while a process holds: leasehold's forceAcquire from another instance; for the
//   session locks, pg_terminate_backend of the holder's connection (their only takeover): takeover
//   sent -> the holder's signal aborted.
// - idle: one holder and 10 waiters in two processes for 5 s: the CPU time the server's processes
//   for the bench database used per second, i.e. the load a lock puts on it while nothing changes.
// - uncontended: acquire + release in a loop, 1 in flight and 16 in flight (distinct names), per second.
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { now, type Summary, summarize } from './lib/stats.ts';
import {
  CONTENDERS,
  leaseholdPg,
  type PgClient,
  type PgContender,
  type PgHeld,
  POLL_MS,
  TTL,
} from './postgres/contenders.ts';

const ADMIN = process.env.LEASEHOLD_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// ---- worker side: one process holding or waiting on command ----

type Command =
  | { op: 'connect'; contender: string; url: string }
  | { op: 'acquire'; name: string; id: number; thenRelease?: boolean }
  | { op: 'release'; id: number }
  | { op: 'close' };

function worker(): void {
  let client: PgClient | undefined;
  const held = new Map<number, PgHeld>();
  process.on('message', async (command: Command) => {
    if (command.op === 'connect') {
      client = await CONTENDERS.find((c) => c.id === command.contender)!.connect(command.url);
      process.send!({ op: 'connected' });
    } else if (command.op === 'acquire') {
      const lease = await client!.acquire(command.name);
      const at = now();
      held.set(command.id, lease);
      lease.signal.addEventListener('abort', () => process.send!({ op: 'lost', id: command.id, at: now() }));
      process.send!({ op: 'acquired', id: command.id, at, backend: lease.backend });
      if (command.thenRelease) {
        held.delete(command.id);
        await lease.release();
        process.send!({ op: 'released', id: command.id, at: now() });
      }
    } else if (command.op === 'release') {
      const lease = held.get(command.id)!;
      held.delete(command.id);
      const at = now();
      await lease.release();
      process.send!({ op: 'released', id: command.id, at });
    } else {
      await client?.close();
      process.exit(0);
    }
  });
}

// ---- parent side ----

interface Reply {
  op: string;
  id?: number;
  at?: number;
  backend?: number;
}

/** A worker process and a way to wait for its next reply of a kind. */
class Proc {
  readonly child: ChildProcess;
  readonly #waiting: { op: string; id?: number | undefined; resolve: (reply: Reply) => void }[] = [];
  readonly #early: Reply[] = [];

  constructor() {
    this.child = fork(new URL(import.meta.url).pathname, ['--worker'], { execArgv: ['--import', 'tsx'] });
    this.child.on('message', (reply: Reply) => {
      const i = this.#waiting.findIndex(
        (w) => w.op === reply.op && (w.id === undefined || w.id === reply.id),
      );
      if (i < 0) this.#early.push(reply);
      else this.#waiting.splice(i, 1)[0]!.resolve(reply);
    });
  }

  send(command: Command): void {
    this.child.send(command);
  }

  next(op: string, id?: number): Promise<Reply> {
    const i = this.#early.findIndex((r) => r.op === op && (id === undefined || r.id === id));
    if (i >= 0) return Promise.resolve(this.#early.splice(i, 1)[0]!);
    return new Promise((resolve) => this.#waiting.push({ op, id, resolve }));
  }

  async close(): Promise<void> {
    this.send({ op: 'close' });
    await new Promise((resolve) => this.child.once('exit', resolve));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let ids = 0;

async function procs(contender: PgContender, url: string, n: number): Promise<Proc[]> {
  const out = Array.from({ length: n }, () => new Proc());
  for (const p of out) p.send({ op: 'connect', contender: contender.id, url });
  await Promise.all(out.map((p) => p.next('connected')));
  return out;
}

async function handoff(contender: PgContender, url: string, samples: number): Promise<Summary> {
  const [a, b] = (await procs(contender, url, 2)) as [Proc, Proc];
  const name = `handoff-${randomBytes(4).toString('hex')}`;
  const gaps: number[] = [];
  let holder = a;
  let waiter = b;
  let heldId = ++ids;
  holder.send({ op: 'acquire', name, id: heldId });
  await holder.next('acquired', heldId);
  for (let i = 0; i < samples + 5; i++) {
    const waitId = ++ids;
    waiter.send({ op: 'acquire', name, id: waitId });
    await sleep(50);
    holder.send({ op: 'release', id: heldId });
    const released = await holder.next('released', heldId);
    const acquired = await waiter.next('acquired', waitId);
    if (i >= 5) gaps.push(acquired.at! - released.at!); // the first few warm the code up
    [holder, waiter] = [waiter, holder];
    heldId = waitId;
  }
  holder.send({ op: 'release', id: heldId });
  await holder.next('released', heldId);
  await Promise.all([a.close(), b.close()]);
  return summarize(gaps);
}

/** How a holder of `contender` loses its lock to someone else; `take` returns how to let go again. */
interface Takeover {
  take(name: string, backend: number | undefined): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * leasehold's takeover is its own forceAcquire, from another instance in this process; a session
 * lock's only takeover is its connection terminated by another session.
 */
async function takeover(contender: PgContender, url: string): Promise<Takeover> {
  if (contender.id === leaseholdPg.id) {
    const { Leasehold } = await import('../src/index.ts');
    const taker = await Leasehold.connect({ postgres: url, ttl: TTL });
    return {
      take: async (name) => {
        const taken = await taker.forceAcquire(name);
        return async () => {
          await taken.release();
        };
      },
      close: () => taker.close(),
    };
  }
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  return {
    take: async (_name, backend) => {
      await admin.query('SELECT pg_terminate_backend($1)', [backend]);
      return async () => {};
    },
    close: () => admin.end(),
  };
}

async function loss(contender: PgContender, url: string, samples: number): Promise<Summary> {
  const [holder] = (await procs(contender, url, 1)) as [Proc];
  const taker = await takeover(contender, url);
  const gaps: number[] = [];
  for (let i = 0; i < samples + 3; i++) {
    const name = `loss-${randomBytes(4).toString('hex')}`;
    const id = ++ids;
    holder.send({ op: 'acquire', name, id });
    const acquired = await holder.next('acquired', id);
    await sleep(20);
    const lost = holder.next('lost', id);
    const sent = now();
    const letGo = await taker.take(name, acquired.backend);
    const at = (await lost).at!;
    if (i >= 3) gaps.push(at - sent);
    holder.send({ op: 'release', id });
    await holder.next('released', id);
    await letGo();
  }
  await taker.close();
  await holder.close();
  return summarize(gaps);
}

async function idleLoad(contender: PgContender, url: string, db: string): Promise<number> {
  const [a, b] = (await procs(contender, url, 2)) as [Proc, Proc];
  const name = `idle-${randomBytes(4).toString('hex')}`;
  const holdId = ++ids;
  a.send({ op: 'acquire', name, id: holdId });
  await a.next('acquired', holdId);
  const waiters: [Proc, number][] = [];
  for (let i = 0; i < 10; i++) {
    const p = i % 2 === 0 ? b : a;
    const id = ++ids;
    // Each takes the lock in turn once the holder lets go, and lets go at once.
    p.send({ op: 'acquire', name, id, thenRelease: true });
    waiters.push([p, id]);
  }
  await sleep(1_000); // waiters settle into their waits
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const before = await serverCpu(admin, db);
  const started = now();
  await sleep(5_000);
  const after = await serverCpu(admin, db);
  const perSecond = (after - before) / ((now() - started) / 1_000);
  await admin.end();
  a.send({ op: 'release', id: holdId });
  await a.next('released', holdId);
  for (const [p, id] of waiters) await p.next('released', id);
  await Promise.all([a.close(), b.close()]);
  return perSecond;
}

/**
 * CPU time (ms) the server's processes serving `db` have used (pg_stat_activity's pids, /proc):
 * the load a lock puts on the database. pg_stat_database's counters would do for transactions,
 * but an idle backend reports them only every 10 s.
 */
async function serverCpu(admin: pg.Client, db: string): Promise<number> {
  const pids = (await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [db])).rows.map(
    (r) => Number(r.pid),
  );
  let ticks = 0;
  for (const pid of pids) {
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

async function uncontended(contender: PgContender, url: string, inFlight: number): Promise<number> {
  const client = await contender.connect(url);
  const base = `u-${randomBytes(4).toString('hex')}`;
  const until = now() + 3_000;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, i) => {
      while (now() < until) {
        const lease = await client.acquire(`${base}-${i}`);
        await lease.release();
        done += 1;
      }
    }),
  );
  await client.close();
  return done / 3;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      samples: { type: 'string', default: '200' },
      only: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const samples = Number(values.samples);
  const only = values.only?.split(',') ?? ['handoff', 'loss', 'idle', 'uncontended'];
  const db = `leasehold_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${db}"`);
  const url = new URL(ADMIN);
  url.pathname = `/${db}`;
  const version = String((await admin.query('SHOW server_version')).rows[0].server_version);
  const results: Record<string, Record<string, unknown>> = {};
  try {
    // leasehold's table exists before anyone measures.
    const { Leasehold } = await import('../src/index.ts');
    await (await Leasehold.connect({ postgres: url.toString() })).close();
    for (const contender of CONTENDERS) {
      const row: Record<string, unknown> = {};
      results[contender.id] = row;
      const say = (what: string, value: unknown) => {
        row[what] = value;
        process.stdout.write(`${contender.id.padEnd(22)} ${what.padEnd(18)} ${format(value)}\n`);
      };
      if (only.includes('handoff')) say('handoff', await handoff(contender, url.toString(), samples));
      if (only.includes('loss')) say('loss', await loss(contender, url.toString(), samples));
      if (only.includes('idle')) say('idle cpu ms/s', await idleLoad(contender, url.toString(), db));
      if (only.includes('uncontended')) {
        say('uncontended 1', await uncontended(contender, url.toString(), 1));
        say('uncontended 16', await uncontended(contender, url.toString(), 16));
      }
    }
  } finally {
    await admin.query(`DROP DATABASE "${db}" WITH (FORCE)`);
    await admin.end();
  }
  const report = {
    date: new Date().toISOString(),
    postgres: version,
    node: process.version,
    samples,
    pollMs: POLL_MS,
    ttl: TTL,
    results,
  };
  if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${markdownTable(report)}\n`);
}

function format(value: unknown): string {
  if (typeof value === 'number') return value.toFixed(1);
  const s = value as Summary;
  return `p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms  (n ${s.n})`;
}

interface Report {
  postgres: string;
  node: string;
  samples: number;
  results: Record<string, Record<string, unknown>>;
}

/** The table docs/postgres.md carries. */
export function markdownTable(report: Report): string {
  const ms = (v: unknown) =>
    v === undefined ? '-' : `${(v as Summary).p50.toFixed(2)} / ${(v as Summary).p99.toFixed(2)}`;
  const n = (v: unknown) => (v === undefined ? '-' : Math.round(v as number).toLocaleString('en-US'));
  const cpu = (v: unknown) => (v === undefined ? '-' : (v as number).toFixed(1));
  const rows = CONTENDERS.map((c) => {
    const r = report.results[c.id] ?? {};
    return `| ${c.label} | ${ms(r['handoff'])} | ${ms(r['loss'])} | ${cpu(r['idle cpu ms/s'])} | ${n(r['uncontended 1'])} / ${n(r['uncontended 16'])} |`;
  });
  return [
    `PostgreSQL ${report.postgres}, Node ${report.node}, ${report.samples} samples per percentile`,
    '',
    '| contender | handoff p50 / p99 (ms) | loss detected p50 / p99 (ms) | idle load (server CPU, ms/s) | uncontended 1 / 16 in flight (ops/s) |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

if (process.argv[2] === '--worker') worker();
else await main();
