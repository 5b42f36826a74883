// Where a handoff between processes spends its time, stage by stage, beside the floor a
// multi-process lock can reach on this machine (issue 15: "handoff p50 <= 2x the floor"):
//
//   npm run bench:stages [-- --seconds 3 --rounds 3 --waiters 1,2,3 --control --hold 1 --hold-max 1]
//
// Every cell runs the handoff scenario's shape (bench/scenarios/handoff.ts): P+1 worker processes
// take turns on one lock, each holding it 1 ms, then stepping aside until another process holds
// it, so that at every release P processes wait. The gap runs from the holder calling release to
// the next holder's acquire resolving, on the same cross-process clock as the scenario
// (performance.timeOrigin + performance.now(), each worker's offset measured over IPC and applied).
// Contenders:
//   bare-push        leasehold's acquire.lua / release.lua over bare RESP3 sockets, CLIENT TRACKING ON
//                    on the command connection; a waiter retries inside the callback that read the
//                    push: the cross-process floor (node-redis's way of hearing pushes)
//   bare-redirect    the same over RESP2, tracking redirected to a second, subscribed connection
//                    (ioredis's way)
//   leasehold-node-redis, leasehold-ioredis   the library, as the full bench runs it (compiled)
// Stages come from bench/stages/probe.ts inside each worker (socket 'data' and write timestamps,
// the dispatcher's setImmediate, the `leasehold:acquired` diagnostics channel); --control also runs
// leasehold in workers without the probe, to show what the probe itself costs. The in-process
// floor of bench/scenarios/floor.ts (the full bench's) is measured before and after the cells.
// Results go to bench/results/handoff-stages.json and stdout; docs/benchmarks.md quotes them.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compileLeasehold } from './lib/build.ts';
import { machine } from './lib/machine.ts';
import { Bench } from './lib/redis.ts';
import { now, type Summary, round as sig, summarize } from './lib/stats.ts';
import { Worker } from './lib/workers.ts';
import { lockName } from './scenarios/context.ts';
import { bareHandoffs } from './scenarios/floor.ts';
import {
  analyse,
  type CellResult,
  combine,
  GRANT_STAGES,
  type RoundSamples,
  STAGES,
} from './stages/analyse.ts';
import type { StagesRun } from './stages/worker.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    waiters: { type: 'string', default: '1,2,3' },
    contenders: { type: 'string', default: 'bare-push,bare-redirect,leasehold-node-redis,leasehold-ioredis' },
    control: { type: 'boolean', default: false },
    // The idle-waiter pattern of the full bench's section 2b: --hold 150 --hold-max 250.
    hold: { type: 'string', default: '1' },
    'hold-max': { type: 'string' },
    out: { type: 'string', default: 'bench/results/handoff-stages.json' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const waiterCounts = values.waiters.split(',').map(Number);
if (!(seconds > 0) || !(rounds > 0) || !waiterCounts.every((w) => Number.isInteger(w) && w > 0))
  throw new TypeError('--seconds, --rounds and --waiters must be positive (waiters: integers)');
const warmupMs = 300;
const hold = Number(values.hold);
const holdMax = Number(values['hold-max'] ?? values.hold);
if (!(hold >= 0) || !(holdMax >= hold))
  throw new TypeError('--hold and --hold-max: 0 <= hold <= hold-max (ms)');
const ttl = 10_000;
const script = fileURLToPath(new URL('./stages/worker.ts', import.meta.url));

interface Cell {
  contender: string;
  waiters: number;
  probe: boolean;
}
const cells: Cell[] = [];
for (const contender of values.contenders.split(','))
  for (const waiters of waiterCounts) cells.push({ contender, waiters, probe: true });
if (values.control)
  for (const contender of values.contenders.split(',').filter((c) => c.startsWith('leasehold')))
    cells.push({ contender, waiters: Math.max(...waiterCounts), probe: false });
const label = (c: Cell) => `${c.contender}${c.probe ? '' : ' (no probe)'}, ${c.waiters} waiting`;

const compiled = await compileLeasehold();
if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD'] = compiled.entry;
process.env['BENCH_LEASEHOLD_NOTE'] = compiled.note;

async function spawn(count: number, probe: boolean, first: number): Promise<Worker[]> {
  process.env['BENCH_STAGES_PROBE'] = probe ? '1' : '0';
  const list = await Promise.all(
    Array.from({ length: count }, (_, i) => Worker.spawn(first + i, { script })),
  );
  delete process.env['BENCH_STAGES_PROBE'];
  return list;
}

const bench = await Bench.start();
const pool = { probe: [] as Worker[], plain: [] as Worker[] };
const processes = Math.max(...waiterCounts) + 1;
const samples = new Map<Cell, RoundSamples[]>(cells.map((c) => [c, []]));
const offsets = new Map<Worker, { offset: number; error: number }>();
const started = now();
/** floor.ts's floor (one process, one waiter, bare sockets), before and after the cells. */
const inProcess: Summary[] = [];
const inProcessFloor = async (when: string) => {
  const s = summarize(await bareHandoffs(bench.port, 2_000));
  inProcess.push(s);
  console.log(`  in-process floor (${when}): p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms`);
};
try {
  pool.probe = await spawn(processes, true, 0);
  if (values.control) pool.plain = await spawn(processes, false, processes);
  for (const w of [...pool.probe, ...pool.plain]) offsets.set(w, await w.clockOffset());
  console.log(
    `handoff-stages: ${rounds} rounds x ${seconds} s per cell, ${await bench.version()}; clock offsets ` +
      [...offsets.values()]
        .map((o) => `${(o.offset * 1000).toFixed(0)}±${(o.error * 1000).toFixed(0)} µs`)
        .join(', '),
  );
  const contenders = [...new Set(cells.map((c) => c.contender))];
  for (const w of pool.probe)
    for (const id of contenders) await w.call({ cmd: 'init', contender: id, url: bench.url });
  for (const w of pool.plain)
    for (const id of contenders.filter((c) => c.startsWith('leasehold')))
      await w.call({ cmd: 'init', contender: id, url: bench.url });

  await inProcessFloor('before');
  for (let r = 0; r < rounds; r++) {
    // Rotated every round, so that no cell always runs first or after the same neighbour.
    const order = [...cells.slice(r % cells.length), ...cells.slice(0, r % cells.length)];
    for (const cell of order) {
      const workers = (cell.probe ? pool.probe : pool.plain).slice(0, cell.waiters + 1);
      const clock = workers.map((w) => offsets.get(w)?.offset ?? 0);
      const unsubscribe = workers.map((w) =>
        w.on((event) => {
          if (event.event === 'acq')
            for (const other of workers) other.notify({ notice: 'held', by: event.worker, t: event.t });
        }),
      );
      const name = lockName('stages', cell.contender, cell.waiters, cell.probe ? 'p' : 'c', r);
      const t0 = now();
      const loops = workers.map((w) =>
        w.call<StagesRun>({ cmd: 'handoff', contender: cell.contender, name, ttl, hold, holdMax }),
      );
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      const t1 = now();
      for (const w of workers) w.notify({ notice: 'stop' });
      const runs = await Promise.all(loops);
      for (const stopListening of unsubscribe) stopListening();
      // Worker indices in events are global (pool.plain starts after pool.probe): map by position.
      const result = analyse(runs, clock, t0 + warmupMs, t1);
      samples.get(cell)!.push(result);
      const p50 = [...result.gaps].sort((a, b) => a - b)[Math.floor(result.gaps.length / 2)] ?? Number.NaN;
      console.log(
        `  round ${r + 1} ${label(cell)}: ${result.gaps.length} handoffs, gap p50 ${p50.toFixed(3)} ms, ` +
          `${result.pushGaps.length} push-driven, ${result.grantGaps.length} by grant, ${(result.attempts / result.gaps.length).toFixed(2)} attempts/handoff`,
      );
    }
  }
  await inProcessFloor('after');
} finally {
  await Promise.all([...pool.probe, ...pool.plain].map((w) => w.stop()));
  await bench.stop();
}

const results = cells.map((cell) => ({
  ...cell,
  processes: cell.waiters + 1,
  ...combine(samples.get(cell)!),
}));
const ms = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(3));
console.log(
  '\n| contender | waiting | handoffs (push-driven) | attempts / handoff | gap p50 / p99 | push-driven gap p50 / p99 / mean |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of results)
  console.log(
    `| ${r.contender}${r.probe ? '' : ' (no probe)'} | ${r.waiters} | ${r.handoffs} (${r.pushDriven}) | ` +
      `${r.attemptsPerHandoff.toFixed(2)} | ${ms(r.gap.p50)} / ${ms(r.gap.p99)} | ` +
      `${ms(r.pushDrivenGap.p50)} / ${ms(r.pushDrivenGap.p99)} / ${ms(r.pushDrivenGap.mean)} |`,
  );
console.log('\nStages (p50 / p99 / mean, ms; means add up to the push-driven gap mean):\n');
console.log(
  `| stage | ${results
    .filter((r) => r.probe)
    .map((r) => `${r.contender}, ${r.waiters} waiting`)
    .join(' | ')} |`,
);
console.log(
  `| --- |${results
    .filter((r) => r.probe)
    .map(() => ' ---: |')
    .join('')}`,
);
for (const [stage, text] of STAGES)
  console.log(
    `| ${text} | ${results
      .filter((r) => r.probe)
      .map((r) => {
        const s = (r as CellResult).stages[stage];
        return s === undefined ? '–' : `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.mean)}`;
      })
      .join(' | ')} |`,
  );

if (results.some((r) => r.grantDriven > 0)) {
  const granted = results.filter((r) => r.probe && r.grantDriven > 0);
  console.log(
    '\nHandoffs by direct grant (p50 / p99 / mean, ms; means add up to the grant-driven gap mean):\n',
  );
  console.log(
    `| stage | ${granted.map((r) => `${r.contender}, ${r.waiters} waiting (${r.grantDriven})`).join(' | ')} |`,
  );
  console.log(`| --- |${granted.map(() => ' ---: |').join('')}`);
  const cell = (s: Summary | undefined) =>
    s === undefined ? '–' : `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.mean)}`;
  console.log(`| gap | ${granted.map((r) => cell(r.grantDrivenGap)).join(' | ')} |`);
  for (const [stage, text] of GRANT_STAGES)
    console.log(`| ${text} | ${granted.map((r) => cell(r.grantStages[stage])).join(' | ')} |`);
}

const rounded = (value: unknown): unknown =>
  typeof value === 'number'
    ? sig(value)
    : Array.isArray(value)
      ? value.map(rounded)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]))
        : value;
await writeFile(
  values.out,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: machine(),
      minutes: sig((now() - started) / 60_000, 2),
      leasehold: compiled.note,
      settings: {
        seconds,
        rounds,
        warmupMs,
        hold,
        holdMax,
        ttl,
        waiters: waiterCounts,
        control: values.control,
      },
      clockOffsets: [...offsets.values()].map((o) => rounded(o)),
      inProcessFloor: rounded(inProcess),
      stages: Object.fromEntries(STAGES),
      grantStages: Object.fromEntries(GRANT_STAGES),
      cells: rounded(results),
    },
    null,
    2,
  )}\n`,
);
process.exit(0);
