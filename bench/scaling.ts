// How cost grows (issue 15): `npm run bench:scaling` (about 10 minutes), `-- --quick` (about 2).
// In one run, against one redis-server it starts on a free port:
//   waiters curve   1, 10, 100, 1,000 waiters on one lock name over 1, 4, 16 processes: handoff gap,
//                   idle load, acquire attempts per handoff (bench/scaling/waiters.ts)
//   held leases     1k, 10k, 100k leases held by one process: heap per lease, Redis and client CPU
//                   per renewal cycle (bench/scaling/held.ts)
// Writes bench/results/scaling.json (a quick or partial run: scaling.tmp.json) and, on a full run,
// the generated part of "How cost grows" in docs/benchmarks.md (between <!-- scaling:start --> and
// <!-- scaling:end -->, inside the hand-written block) with its charts in docs/benchmarks/.
// Options: --quick, --contenders=a,b, --server=<redis-server binary> (or LEASEHOLD_REDIS_SERVER),
// --only=waiters|held, --docs / --no-docs, --report=scaling.json (rewrite the docs only).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { contenders as allContenders } from './contenders/index.ts';
import type { Contender } from './contenders/types.ts';
import { compileLeasehold } from './lib/build.ts';
import { machine } from './lib/machine.ts';
import { Bench } from './lib/redis.ts';
import { Worker } from './lib/workers.ts';
import { type HeldSettings, heldCell } from './scaling/held.ts';
import { END, renderScalingCharts, START, scalingSection } from './scaling/report.ts';
import type { ScalingResults } from './scaling/results.ts';
import { cells, type WaitersSettings, waitersCell } from './scaling/waiters.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    contenders: { type: 'string' },
    server: { type: 'string' },
    only: { type: 'string' },
    docs: { type: 'boolean' },
    'no-docs': { type: 'boolean' },
    report: { type: 'string' },
  },
});
// Read by the harness on every start (test/harness/server-binary.ts), workers inherit it.
if (values.server !== undefined) process.env['LEASEHOLD_REDIS_SERVER'] = values.server;

const waitersFull: WaitersSettings = {
  waiters: [1, 10, 100, 1_000],
  processes: [1, 4, 16],
  handoffs: 30,
  handoffCapMs: 6_000,
  settleMs: 1_000,
  idleWindowMs: 2_000,
  afterMs: 10,
  holdMs: 10,
  ttl: 10_000,
  drainCapMs: 4_000,
};
const heldFull: HeldSettings = {
  leases: [1_000, 10_000, 100_000],
  ttl: 3_000,
  warmupMs: 3_000,
  windowMs: 5_000,
  concurrency: 64,
  acquireCapMs: 60_000,
  releaseCapMs: 20_000,
  limits: {},
};
const settings = values.quick
  ? {
      waiters: {
        ...waitersFull,
        waiters: [1, 10, 100],
        processes: [1, 4],
        handoffs: 10,
        settleMs: 500,
        idleWindowMs: 1_000,
      },
      held: { ...heldFull, leases: [1_000, 10_000], warmupMs: 1_500, windowMs: 2_500 },
    }
  : { waiters: waitersFull, held: heldFull };

const log = (line: string) => console.log(line);
const errorText = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).split('\n')[0]!;

function fail(results: ScalingResults, contender: string, cell: string, error: unknown): void {
  results.failures[contender] ??= {};
  results.failures[contender][cell] = errorText(error);
}

async function writeDocs(results: ScalingResults): Promise<void> {
  const charts = await renderScalingCharts(results, `${root}docs/benchmarks`);
  const section = scalingSection(results, charts);
  const path = `${root}docs/benchmarks.md`;
  const doc = await readFile(path, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start === -1 || end < start)
    throw new Error(
      `docs/benchmarks.md has no ${START} ... ${END} (inside the hand-written block): add them`,
    );
  await writeFile(path, `${doc.slice(0, start)}${section}${doc.slice(end + END.length)}`);
  console.log(
    `wrote the scaling tables in docs/benchmarks.md and ${charts.length} charts in docs/benchmarks/`,
  );
}

async function runWaiters(bench: Bench, list: Contender[], results: ScalingResults): Promise<void> {
  const s = settings.waiters;
  const most = Math.max(...s.processes);
  console.log(`\nwaiters curve: starting ${most} worker processes`);
  const pool = await Promise.all(Array.from({ length: most }, (_, i) => Worker.spawn(i)));
  try {
    for (const c of list) {
      for (const { waiters, processes } of cells(s)) {
        const cell = `${waiters} waiters / ${processes} processes`;
        try {
          await Promise.all(
            pool.slice(0, processes).map((w) => w.call({ cmd: 'init', contender: c.id, url: bench.url })),
          );
          const r = await waitersCell(bench, pool, c, waiters, processes, s, log);
          results.waiters.push(r);
          log(
            `  ${c.id} ${cell}: gap p50 ${r.gap.p50.toFixed(3)} p99 ${r.gap.p99.toFixed(3)} ms over ${r.handoffs}${r.capped ? ' (capped)' : ''}, ` +
              `${r.attempts.toFixed(1)} attempts and ${r.perHandoff.commands.toFixed(1)} commands per handoff; ` +
              `idle ${r.idle.commandsPerSecond.toFixed(1)} commands/s, Redis ${r.idle.redisCpuPercent.toFixed(1)} %, ` +
              `waiters ${r.idle.waiterCpuPercent.toFixed(1)} %${r.failed.length > 0 ? `; FAILED ${r.failed.length}: ${r.failed[0]}` : ''}`,
          );
        } catch (error) {
          fail(results, c.id, `waiters ${cell}`, error);
          log(`  ${c.id} ${cell}: FAILED: ${errorText(error)}`);
        }
      }
      await Promise.allSettled(pool.map((w) => w.call({ cmd: 'close', contender: c.id })));
    }
  } finally {
    await Promise.all(pool.map((w) => w.stop()));
  }
}

async function runHeld(bench: Bench, list: Contender[], results: ScalingResults): Promise<void> {
  console.log('\nheld-leases curve');
  for (const c of list) {
    for (const leases of settings.held.leases) {
      try {
        const r = await heldCell(bench, c, leases, settings.held);
        results.held.push(r);
        if ('skipped' in r) log(`  ${c.id} ${leases} leases: ${r.skipped}`);
        else
          log(
            `  ${c.id} ${leases} leases: heap ${(r.heapPerLease / 1024).toFixed(2)} KiB/lease, cycle ${r.cycleMs.toFixed(0)} ms, ` +
              `per cycle Redis ${r.perCycle.redisCpuMs.toFixed(1)} ms, client ${r.perCycle.clientCpuMs.toFixed(1)} ms, ` +
              `${r.perCycle.reads.toFixed(0)} reads; per extension Redis ${r.redisUsecPerExtension.toFixed(2)} us; ` +
              `acquired in ${(r.acquireMs / 1000).toFixed(1)} s, lost ${r.lost}`,
          );
      } catch (error) {
        fail(results, c.id, `held ${leases}`, error);
        log(`  ${c.id} ${leases} leases: FAILED: ${errorText(error)}`);
      }
      // Whatever a capped or failed cell left behind must not weigh on the next one.
      await bench.admin.flushall();
    }
  }
}

async function main(): Promise<void> {
  if (values.report !== undefined) {
    await writeDocs(JSON.parse(await readFile(values.report, 'utf8')) as ScalingResults);
    return;
  }
  const wanted = values.contenders?.split(',');
  const chosen = allContenders.filter((c) => wanted === undefined || wanted.includes(c.id));
  if (chosen.some((c) => c.id.startsWith('leasehold')) && process.env['BENCH_LEASEHOLD'] === undefined) {
    const compiled = await compileLeasehold();
    if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD'] = compiled.entry;
    process.env['BENCH_LEASEHOLD_NOTE'] = compiled.note;
    console.log(`leasehold: ${compiled.note}`);
  }
  const infos = await Promise.all(chosen.map((c) => c.info()));
  const list = chosen.filter((_, i) => infos[i]?.unavailable === undefined);
  const started = performance.now();
  const bench = await Bench.start();
  const results: ScalingResults = {
    schema: 1,
    mode: values.quick ? 'quick' : 'full',
    command: `npm run bench:scaling${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    machine: machine(),
    redisVersion: '',
    durationSeconds: 0,
    loadAverageAtEnd: [],
    contenders: infos,
    settings,
    waiters: [],
    held: [],
    failures: {},
  };
  try {
    const info = await bench.info('server');
    results.redisVersion = `${info['server_name'] === 'valkey' ? 'Valkey' : 'Redis'} ${info['valkey_version'] ?? info['redis_version']}`;
    console.log(
      `scaling (${results.mode}): ${list.map((c) => c.id).join(', ')} on ${results.redisVersion} (port ${bench.port}), ` +
        `${results.machine.cpus} CPUs, load ${results.machine.loadAverage.join(' ')}`,
    );
    if (values.only !== 'held') await runWaiters(bench, list, results);
    if (values.only !== 'waiters') await runHeld(bench, list, results);
  } finally {
    await bench.stop();
  }
  results.durationSeconds = (performance.now() - started) / 1000;
  results.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  const complete = !values.quick && wanted === undefined && values.only === undefined;
  const out = `${root}bench/results/${complete ? 'scaling.json' : 'scaling.tmp.json'}`;
  await mkdir(`${root}bench/results`, { recursive: true });
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${out} (${(results.durationSeconds / 60).toFixed(1)} min)`);
  if (values.docs === true || (values['no-docs'] !== true && complete)) await writeDocs(results);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
