// The hot-path budget (issue 42): what one uncontended acquire + release costs the client, this
// tree against a baseline build of another ref in the same run (`--only=budget --baseline=<ref>`),
// on both drivers, and whether this tree stays within the tolerance. Not a timed test: CPU time and
// bytes allocated per pair, which a busy machine moves far less than it moves throughput.
//   - Each side (build x driver) is a worker process of its own, started once and warmed up, so
//     that neither build shares a heap, a JIT or a connection with the other.
//   - A round measures every side once, in an order that alternates between rounds (this tree
//     first, then the baseline first), so that drift in the machine's load falls on both alike;
//     the verdict is on the medians over rounds.
//   - Per shape (1 in flight, 64 in flight): `pairs` acquire + release on free names, no waiters,
//     each lease's `signal` read (bench/contenders/leasehold.ts says why).
//   - A third side per driver, this tree with an OpenTelemetry TracerProvider recording every span
//     (issue 41: what traces cost), is measured in the same rounds and reported beside; it is not
//     part of the verdict. The other two sides have @opentelemetry/api installed and no provider.
//   - CPU: process.cpuUsage() over the measured pairs (the client process only; Redis is not in
//     it). Bytes: the JS heap allocated over them (bench/workers/pairs.ts says how it is counted).
import { join } from 'node:path';
import { Bench } from '../lib/redis.ts';
import { median } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { PairsResult } from '../workers/protocol.ts';
import { type Context, lockName } from './context.ts';
import { profiled } from './uncontended.ts';

/**
 * The tolerance: per driver and shape, the median over rounds of (this tree's figure per pair /
 * the baseline's in the same round) may exceed 1 by this much, for CPU and for bytes alike.
 */
export const TOLERANCE = { cpu: 0.1, bytes: 0.1 } as const;

export interface BudgetCell {
  driver: 'node-redis' | 'ioredis';
  lanes: number;
  /** Per pair, medians over rounds: CPU µs and bytes, this tree and the baseline. */
  cpu: { current: number; baseline: number };
  bytes: { current: number; baseline: number };
  /**
   * This tree against the baseline: the median over rounds of each round's ratio, less 1 (+0.05:
   * 5 % more). The two sides of a round ran one right after the other, so a ratio sees the same
   * machine; its median is what the tolerance applies to. NaN without a baseline.
   */
  change: { cpu: number; bytes: number };
  /** Each round's figures, this tree then the baseline. */
  rounds: { cpu: [number, number]; bytes: [number, number] }[];
  /** Which figures exceed the tolerance. */
  over: ('cpu' | 'bytes')[];
  /** This tree with a recording TracerProvider: medians over rounds, and their change against `current`. */
  traced: { cpu: number; bytes: number; change: { cpu: number; bytes: number } };
}

export interface BudgetResult {
  /** The baseline commit; undefined when the run named none (this tree is then measured alone). */
  baseline?: string;
  settings: Context['config']['budget'];
  tolerance: typeof TOLERANCE;
  cells: BudgetCell[];
  /** Whether every cell is within the tolerance (true when there was nothing to compare). */
  within: boolean;
}

const DRIVERS = ['node-redis', 'ioredis'] as const;
/** The median over rounds of this tree's figure divided by the baseline's in the same round, less 1. */
const change = (mine: number[], theirs: number[]) =>
  median(mine.map((x, i) => x / (theirs[i] ?? Number.NaN))) - 1;

export async function budget(ctx: Context): Promise<BudgetResult> {
  const cfg = ctx.config.budget;
  const compare = ctx.options.baseline !== undefined;
  /** Every side measured: the builds, then this tree traced (not in the verdict). */
  const sides = compare ? (['current', 'baseline', 'traced'] as const) : (['current', 'traced'] as const);
  const bench = await Bench.start();
  const workers = new Map<string, Worker>();
  const id = (driver: string, build: string) =>
    `leasehold-${build === 'baseline' ? 'baseline-' : ''}${driver}${build === 'traced' ? ' traced' : ''}`;
  const contenderOf = (side: string) => side.replace(' traced', '');
  try {
    let index = 900;
    for (const driver of DRIVERS)
      for (const build of sides) {
        const side = id(driver, build);
        const options = profiled(ctx.options.profile, `budget-${side.replace(' ', '-')}`);
        const env = build === 'traced' ? { BENCH_TRACING: 'record' } : {};
        const worker = await Worker.spawn(index++, { ...options, env });
        workers.set(side, worker);
        await worker.call({ cmd: 'init', contender: contenderOf(side), url: bench.url });
      }
    const figures = new Map<string, { cpu: number[]; bytes: number[] }>();
    const measure = async (side: string, lanes: number, pairs: number, round: number) => {
      const warmup = round < 0;
      const r = await workers.get(side)!.call<PairsResult>({
        cmd: 'pairs',
        contender: contenderOf(side),
        lanes,
        ttl: 10_000,
        // Names of equal length on both sides (a name is in every command and every key).
        tag: lockName('budget', lanes, round, [...workers.keys()].indexOf(side)),
        count: warmup ? pairs * 4 : pairs,
        allocations: true,
      });
      const key = `${side} ${lanes}`;
      const f = figures.get(key) ?? { cpu: [], bytes: [] };
      figures.set(key, f);
      if (warmup) return;
      f.cpu.push((r.cpu * 1000) / r.pairs);
      f.bytes.push((r.allocated ?? Number.NaN) / r.pairs);
    };
    // Round -1 warms every side up (the JIT, the connection, the scripts loaded) and is not counted.
    // The two builds of a verdict run back to back, in an order that alternates between rounds,
    // and the traced side after both: with the traced side between them, or a build always first
    // after another shape, the same code measured against itself came out 15-29 % dearer at one
    // in flight (an A/A run of `--baseline=HEAD`, 2026-11-30).
    for (let round = -1; round < cfg.rounds; round++) {
      const builds = sides.filter((side) => side !== 'traced');
      const order = [...(round % 2 === 0 ? builds : [...builds].reverse()), 'traced'];
      for (const driver of DRIVERS)
        for (const { lanes, pairs } of cfg.shapes)
          for (const build of order) await measure(id(driver, build), lanes, pairs, round);
    }
    const cells: BudgetCell[] = [];
    for (const driver of DRIVERS) {
      for (const { lanes } of cfg.shapes) {
        const mine = figures.get(`${id(driver, 'current')} ${lanes}`)!;
        const traced = figures.get(`${id(driver, 'traced')} ${lanes}`)!;
        const theirs = figures.get(`${id(driver, 'baseline')} ${lanes}`) ?? { cpu: [], bytes: [] };
        const delta = { cpu: change(mine.cpu, theirs.cpu), bytes: change(mine.bytes, theirs.bytes) };
        const cell: BudgetCell = {
          driver,
          lanes,
          cpu: { current: median(mine.cpu), baseline: median(theirs.cpu) },
          bytes: { current: median(mine.bytes), baseline: median(theirs.bytes) },
          change: delta,
          rounds: mine.cpu.map((_, i) => ({
            cpu: [mine.cpu[i]!, theirs.cpu[i] ?? Number.NaN],
            bytes: [mine.bytes[i]!, theirs.bytes[i] ?? Number.NaN],
          })),
          over: (['cpu', 'bytes'] as const).filter((k) => delta[k] > TOLERANCE[k]),
          traced: {
            cpu: median(traced.cpu),
            bytes: median(traced.bytes),
            change: { cpu: change(traced.cpu, mine.cpu), bytes: change(traced.bytes, mine.bytes) },
          },
        };
        cells.push(cell);
        const vs = (x: { current: number; baseline: number }, k: 'cpu' | 'bytes', unit: string) =>
          compare
            ? `${x.current.toFixed(0)} ${unit} vs ${x.baseline.toFixed(0)} (${(cell.change[k] * 100).toFixed(1)} %)`
            : `${x.current.toFixed(0)} ${unit}`;
        ctx.log(
          `  budget ${driver}, ${lanes} in flight: CPU ${vs(cell.cpu, 'cpu', 'µs')}, allocated ${vs(cell.bytes, 'bytes', 'B')} per pair` +
            (cell.over.length > 0 ? `: OVER the budget (${cell.over.join(', ')})` : ''),
        );
        const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
        ctx.log(
          `    spans recorded (a TracerProvider registered): CPU ${cell.traced.cpu.toFixed(0)} µs (${pct(cell.traced.change.cpu)}), allocated ${cell.traced.bytes.toFixed(0)} B (${pct(cell.traced.change.bytes)}) per pair`,
        );
      }
    }
    const result: BudgetResult = {
      ...(ctx.options.baseline === undefined ? {} : { baseline: ctx.options.baseline }),
      settings: cfg,
      tolerance: TOLERANCE,
      cells,
      within: cells.every((c) => c.over.length === 0),
    };
    ctx.log(
      !compare
        ? '  budget: no --baseline=<ref>, so nothing to compare with (figures above are this tree alone)'
        : result.within
          ? `  budget: within (CPU +${TOLERANCE.cpu * 100} %, bytes +${TOLERANCE.bytes * 100} % per pair at most)`
          : '  budget: EXCEEDED: this tree’s hot path costs more than the baseline’s beyond the tolerance',
    );
    return result;
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await bench.stop();
    if (ctx.options.profile !== undefined)
      ctx.log(`  CPU profiles: ${join(ctx.options.profile, 'budget-*.cpuprofile')}`);
  }
}
