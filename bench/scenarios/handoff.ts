import { crossProcessFloor } from '../contenders/floor.ts';
import { Bench } from '../lib/redis.ts';
import { median, medianSummary, now, type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { Event } from '../workers/protocol.ts';
import { type Context, guard, lockName, ms, order } from './context.ts';

export interface HandoffRound extends Summary {
  handoffsPerSecond: number;
  /** Acquires that came before the previous holder's release was sent (should be 0). */
  overlaps: number;
  /** The releaser took the lock back itself (stepping aside makes this rare). */
  selfReacquires: number;
}

export interface HandoffResult {
  redisVersion: string;
  settings: Record<string, number>;
  /** Worker clock minus parent clock (ms), with the bound from the IPC round trip. */
  clockOffsets: { worker: number; offset: number; error: number }[];
  contenders: Record<string, HandoffSummary>;
  /**
   * The same loop in the same worker processes over bare sockets with leasehold's scripts
   * (bench/contenders/floor.ts): what any lock that wakes every waiting process pays here.
   */
  floor?: HandoffSummary;
}

export interface HandoffSummary {
  gap: Summary;
  handoffsPerSecond: number;
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

/**
 * Scenario 2: worker processes take turns on one lock. Each holds it `hold` ms, releases, and steps
 * aside until another worker holds it, so at every release the others are already waiting.
 */
export async function handoff(ctx: Context): Promise<HandoffResult> {
  const cfg = ctx.config.handoff;
  const bench = await Bench.start();
  const workers: Worker[] = [];
  try {
    workers.push(...(await Promise.all(Array.from({ length: cfg.workers }, (_, i) => Worker.spawn(i)))));
    const clockOffsets = [];
    for (const w of workers) clockOffsets.push({ worker: w.index, ...(await w.clockOffset()) });
    ctx.log(
      `  handoff: worker clock offsets ${clockOffsets.map((o) => `${(o.offset * 1000).toFixed(0)}±${(o.error * 1000).toFixed(0)} µs`).join(', ')}`,
    );
    const ready = new Set<string>();
    const floor = crossProcessFloor;
    for (const c of [...ctx.contenders, floor]) {
      const ok = await guard(ctx, 'handoff', c.id, () =>
        Promise.all(workers.map((w) => w.call({ cmd: 'init', contender: c.id, url: bench.url }))),
      );
      if (ok !== undefined) ready.add(c.id);
    }
    const rounds = new Map<string, HandoffRound[]>([...ready].map((id) => [id, []]));
    for (let round = 0; round < cfg.rounds; round++) {
      // The floor takes its turn at a rotating place among the contenders, under the same noise.
      const turn = order(ctx, round);
      turn.splice(round % (turn.length + 1), 0, floor);
      for (const c of turn) {
        if (!ready.has(c.id)) continue;
        const name = lockName('handoff', c.id, round);
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
        const loops = workers.map((w) =>
          w.call<number>({ cmd: 'handoff', contender: c.id, name, ttl: cfg.ttl, hold: cfg.hold }),
        );
        await new Promise((resolve) => setTimeout(resolve, cfg.durationMs));
        const stopped = now();
        for (const w of workers) w.notify({ notice: 'stop' });
        const settled = await Promise.allSettled(loops);
        for (const off of unsubscribe) off();
        const failed = settled.find((r) => r.status === 'rejected');
        if (failed !== undefined) {
          await guard(ctx, 'handoff', c.id, () => Promise.reject(failed.reason));
          continue;
        }
        const result = gaps(events, started + cfg.warmupMs, stopped);
        rounds.get(c.id)!.push(result);
        ctx.log(
          `  handoff ${c.id} round ${round + 1}: gap p50 ${ms(result.p50)} p99 ${ms(result.p99)}, ` +
            `${result.handoffsPerSecond.toFixed(0)} handoffs/s, overlaps ${result.overlaps}`,
        );
      }
    }
    for (const id of ready) {
      await Promise.allSettled(workers.map((w) => w.call({ cmd: 'close', contender: id })));
    }
    const contenders: HandoffResult['contenders'] = {};
    let floorSummary: HandoffSummary | undefined;
    for (const [id, list] of rounds) {
      if (list.length === 0) continue;
      const summary = {
        gap: medianSummary(list),
        handoffsPerSecond: median(list.map((r) => r.handoffsPerSecond)),
        overlaps: list.reduce((acc, r) => acc + r.overlaps, 0),
        rounds: list,
      };
      if (id === floor.id) floorSummary = summary;
      else contenders[id] = summary;
    }
    return {
      redisVersion: await bench.version(),
      settings: { ...cfg },
      clockOffsets,
      contenders,
      ...(floorSummary === undefined ? {} : { floor: floorSummary }),
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await bench.stop();
  }
}
