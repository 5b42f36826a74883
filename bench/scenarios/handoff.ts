import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config.ts';
import { directGrantFloor } from '../contenders/floor.ts';
import { Bench } from '../lib/redis.ts';
import { median, medianSummary, now, type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { Event, HandoffRun, Request } from '../workers/protocol.ts';
import { type Context, guard, lockName, type Measured, ms, order, summaries } from './context.ts';
import { type StagesRun, type StagesSummary, stages } from './stages.ts';

export interface HandoffRound extends Summary {
  handoffsPerSecond: number;
  /** Acquires that came before the previous holder's release was sent (should be 0). */
  overlaps: number;
  /** The releaser took the lock back itself (stepping aside makes this rare). */
  selfReacquires: number;
  /** Commands Redis ran per second over the round (polls, PINGs, the handoffs themselves). */
  commandsPerSecond?: number;
  /** Redis CPU (user + sys) per second of the round, ms/s. */
  redisCpuPerSecond?: number;
}

export interface HandoffResult extends Measured<HandoffSummary> {
  /** Worker clock minus parent clock (ms), with the bound from the IPC round trip. */
  clockOffsets: { worker: number; offset: number; error: number }[];
  /** The direct-grant floor (bench/contenders/floor.ts): one trip to Redis and one back. */
  grantFloor?: HandoffSummary;
  /** Where each contender's gap goes, stage by stage (bench --stages; bench/scenarios/stages.ts). */
  stages?: Record<string, StagesSummary>;
}

export interface HandoffSummary {
  gap: Summary;
  handoffsPerSecond: number;
  /** Median over rounds: the load each contender puts on Redis while handing off. */
  commandsPerSecond?: number;
  redisCpuPerSecond?: number;
  overlaps: number;
  rounds: HandoffRound[];
}

/** Release-to-acquire gaps between different processes inside [from, to]. */
export function gaps(events: readonly (Event & { t: number })[], from: number, to: number): HandoffRound {
  const sorted = [...events].sort((a, b) => a.t - b.t);
  const samples: number[] = [];
  let lastRelease: { worker: number; t: number } | undefined;
  let holder: number | undefined;
  let overlaps = 0;
  let selfReacquires = 0;
  for (const e of sorted) {
    if (e.event === 'rel' && 'worker' in e) {
      lastRelease = { worker: e.worker, t: e.t };
      holder = undefined;
    } else if (e.event === 'acq' && 'worker' in e) {
      if (holder !== undefined) overlaps++;
      holder = e.worker;
      if (lastRelease === undefined || e.t < from || e.t > to) continue;
      if (lastRelease.worker === e.worker) selfReacquires++;
      else samples.push(e.t - lastRelease.t);
    }
  }
  return {
    ...summarize(samples),
    handoffsPerSecond: samples.length / ((to - from) / 1000),
    overlaps,
    selfReacquires,
  };
}

type Turns = Omit<Extract<Request, { cmd: 'handoff' }>, 'id' | 'cmd'>;

/**
 * The handoff loop of `request` in every worker for `ms`, each acquisition passed on to all (a
 * worker that released steps aside until another holds the lock). Resolves each loop's run, the
 * acquisitions and releases, and the window (parent clock); rejects as the first failed loop did.
 */
export async function takeTurns(workers: Worker[], request: Turns, ms: number) {
  const events: (Event & { t: number })[] = [];
  const unsubscribe = workers.map((w) =>
    w.on((event) => {
      if (event.event !== 'acq' && event.event !== 'rel') return;
      events.push(event);
      if (event.event === 'acq')
        for (const other of workers) other.notify({ notice: 'held', by: event.worker, t: event.t });
    }),
  );
  const started = now();
  const loops = workers.map((w) => w.call<HandoffRun>({ cmd: 'handoff', ...request }));
  await sleep(ms);
  const stopped = now();
  for (const w of workers) w.notify({ notice: 'stop' });
  const settled = await Promise.allSettled(loops);
  for (const off of unsubscribe) off();
  const runs = settled.map((r) => {
    if (r.status === 'rejected') throw r.reason;
    return r.value;
  });
  return { runs, events, started, stopped };
}

/**
 * Scenario 2: worker processes take turns on one lock. Each holds it `hold` ms, releases, and steps
 * aside until another worker holds it, so at every release the others are already waiting.
 */
export function handoff(ctx: Context): Promise<HandoffResult> {
  return turns(ctx, ctx.config.handoff, 'handoff');
}

/**
 * Scenario 2b, the idle-waiter pattern: the same loop with each hold drawn from 150-250 ms, so at
 * every release the waiters (and Redis) have been idle for a while, as in production.
 */
export function idleHandoff(ctx: Context): Promise<HandoffResult> {
  return turns(ctx, ctx.config.idleHandoff, 'idle-handoff');
}

async function turns(ctx: Context, cfg: Config['handoff'], scenario: string): Promise<HandoffResult> {
  const bench = await Bench.start();
  const workers: Worker[] = [];
  try {
    const env = ctx.options.stages ? { BENCH_STAGES: '1' } : {};
    workers.push(
      ...(await Promise.all(Array.from({ length: cfg.workers }, (_, i) => Worker.spawn(i, { env })))),
    );
    const clockOffsets = [];
    for (const w of workers) clockOffsets.push({ worker: w.index, ...(await w.clockOffset()) });
    ctx.log(
      `  handoff: worker clock offsets ${clockOffsets.map((o) => `${(o.offset * 1000).toFixed(0)}±${(o.error * 1000).toFixed(0)} µs`).join(', ')}`,
    );
    const ready = new Set<string>();
    for (const c of [...ctx.contenders, directGrantFloor]) {
      const ok = await guard(ctx, scenario, c.id, () =>
        Promise.all(workers.map((w) => w.call({ cmd: 'init', contender: c.id, url: bench.url }))),
      );
      if (ok !== undefined) ready.add(c.id);
    }
    const rounds = new Map<string, HandoffRound[]>([...ready].map((id) => [id, []]));
    const records = new Map<string, { runs: StagesRun[][]; from: number[]; to: number[] }>();
    for (let round = 0; round < cfg.rounds; round++) {
      // The floor takes its turn at a rotating place among the contenders, under the same noise.
      const turn = order(ctx.contenders, round);
      turn.splice(round % (turn.length + 1), 0, directGrantFloor);
      for (const c of turn) {
        if (!ready.has(c.id)) continue;
        const name = lockName(scenario, c.id, round);
        const before = await bench.counters();
        const req = { contender: c.id, name, ttl: cfg.ttl, hold: cfg.hold, holdMax: cfg.holdMax ?? cfg.hold };
        const turns = await guard(ctx, scenario, c.id, () => takeTurns(workers, req, cfg.durationMs));
        if (turns === undefined) continue;
        const { events, started, stopped } = turns;
        const runs = turns.runs.map((r) => r.stages);
        // The floor speaks neither leasehold’s scripts nor its grant channels: it has no stages.
        if (c.id !== directGrantFloor.id && runs.every((r) => r !== undefined)) {
          const entry = records.get(c.id) ?? { runs: [], from: [], to: [] };
          records.set(c.id, entry);
          entry.runs.push(runs as StagesRun[]);
          entry.from.push(started + cfg.warmupMs);
          entry.to.push(stopped);
        }
        const after = await bench.counters();
        const seconds = (after.t - before.t) / 1000;
        const result = {
          ...gaps(events, started + cfg.warmupMs, stopped),
          commandsPerSecond: (after.commands - before.commands) / seconds,
          redisCpuPerSecond: (after.cpu - before.cpu) / seconds,
        };
        rounds.get(c.id)!.push(result);
        ctx.log(
          `  ${scenario} ${c.id} round ${round + 1}: gap p50 ${ms(result.p50)} p99 ${ms(result.p99)}, ` +
            `${result.handoffsPerSecond.toFixed(0)} handoffs/s, overlaps ${result.overlaps}, ` +
            `Redis ${result.commandsPerSecond.toFixed(0)} cmds/s, ${result.redisCpuPerSecond.toFixed(0)} ms CPU/s`,
        );
      }
    }
    for (const id of ready)
      await Promise.allSettled(workers.map((w) => w.call({ cmd: 'close', contender: id })));
    const { [directGrantFloor.id]: grantFloor, ...contenders } = summaries(
      rounds,
      (list): HandoffSummary => ({
        gap: medianSummary(list),
        handoffsPerSecond: median(list.map((r) => r.handoffsPerSecond)),
        commandsPerSecond: median(list.map((r) => r.commandsPerSecond ?? Number.NaN)),
        redisCpuPerSecond: median(list.map((r) => r.redisCpuPerSecond ?? Number.NaN)),
        overlaps: list.reduce((acc, r) => acc + r.overlaps, 0),
        rounds: list,
      }),
    );
    const byStage = new Map<string, StagesSummary>();
    const offsets = clockOffsets.map((o) => o.offset);
    for (const [id, r] of records) byStage.set(id, stages(r.runs, offsets, r.from, r.to));
    logStages(ctx, byStage);
    return {
      redisVersion: await bench.product(),
      settings: { ...cfg },
      clockOffsets,
      ...(byStage.size === 0 ? {} : { stages: Object.fromEntries(byStage) }),
      contenders,
      ...(grantFloor === undefined ? {} : { grantFloor }),
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await bench.stop();
  }
}

/** Each contender's handoffs by grant, stage by stage (GRANT_STAGES says which is which), p50 (mean). */
function logStages(ctx: Context, byStage: Map<string, StagesSummary>): void {
  const cell = (x: Summary | undefined) => (x === undefined ? '–' : `${ms(x.p50)} (${ms(x.mean)})`);
  for (const [id, s] of byStage) {
    const parts = Object.entries(s.grant.stages).map(([stage, x]) => `${stage} ${cell(x)}`);
    ctx.log(
      `  stages ${id}: ${s.grant.n} of ${s.handoffs} handoffs by grant, gap ${cell(s.grant.gap)} = ` +
        `${parts.join(' + ')}; ${s.attemptsPerHandoff.toFixed(2)} acquire attempts per handoff`,
    );
  }
}
