import { join } from 'node:path';
import { FLOOR_PREFIX, floorOf, scriptFloors } from '../contenders/script-floor.ts';
import { Bench } from '../lib/redis.ts';
import { median, medianSummary, type Summary } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { PairsResult } from '../workers/protocol.ts';
import { type Context, guard, lockName, type Measured, ms, order, summaries } from './context.ts';

type Shape = Summary & {
  opsPerSecond: number;
  /** The worker process's CPU per acquire + release, µs. */
  cpuPerPair?: number;
  /**
   * Redis's CPU per pair, µs (INFO's used_cpu_user + used_cpu_sys around the phase; the bench's
   * own server, nothing else on it): on two cores the pair costs about the client's CPU plus
   * this one, so it is the half of the cost a client cannot cut.
   */
  serverCpuPerPair?: number;
};

type Pairs = { sequential: Shape; parallel: Shape; rounds: { sequential: Shape; parallel: Shape }[] };

export type UncontendedResult = Measured<Pairs> & {
  /** leasehold's scripts on its bare clients (bench/contenders/script-floor.ts), by driver. */
  floors?: Record<string, Pairs>;
};

const shape = (r: PairsResult, serverCpu?: number): Shape => ({
  ...r.latency,
  opsPerSecond: r.pairs / r.seconds,
  cpuPerPair: (r.cpu * 1000) / r.pairs,
  ...(serverCpu === undefined ? {} : { serverCpuPerPair: (serverCpu * 1000) / r.pairs }),
});

/**
 * Node options for a worker whose CPU profile was asked for (`--profile`): one .cpuprofile per
 * contender, named after the scenario and the contender, in `dir` (open it in Chrome DevTools).
 */
export function profiled(dir: string | undefined, name: string): { execArgv?: string[] } {
  if (dir === undefined) return {};
  return { execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`] };
}

/**
 * Scenario 1: acquire + release on free locks, one at a time and with many in flight, each
 * contender in a worker process of its own (no other library's code or connections beside it).
 * Beside leasehold on each client, in the same rounds, the floor of its scripts on that bare client.
 */
export async function uncontended(ctx: Context): Promise<UncontendedResult> {
  const cfg = ctx.config.uncontended;
  const bench = await Bench.start();
  const workers = new Map<string, Worker>();
  const rounds = new Map<string, Pairs['rounds']>();
  const ids = new Set(ctx.contenders.map((c) => c.id));
  const floors = scriptFloors.filter((f) => ids.has(floorOf(f.id)));
  const all = [...ctx.contenders, ...floors];
  try {
    for (const [i, c] of all.entries()) {
      const worker = await Worker.spawn(600 + i, profiled(ctx.options.profile, `uncontended-${c.id}`));
      workers.set(c.id, worker);
      const ok = await guard(ctx, 'uncontended', c.id, () =>
        worker.call({ cmd: 'init', contender: c.id, url: bench.url }),
      );
      if (ok !== undefined) rounds.set(c.id, []);
    }
    for (let round = 0; round < cfg.rounds; round++) {
      for (const c of order(all, round)) {
        const worker = workers.get(c.id);
        if (worker === undefined || !rounds.has(c.id)) continue;
        await guard(ctx, 'uncontended', c.id, async () => {
          const tag = lockName('uncontended', c.id, round);
          const base = { cmd: 'pairs', contender: c.id, ttl: cfg.ttl, tag } as const;
          const seq = await worker.call<PairsResult>({
            ...base,
            lanes: 1,
            warmup: cfg.warmupOps,
            count: cfg.sequentialOps,
          });
          const before = await bench.counters();
          const par = await worker.call<PairsResult>({ ...base, lanes: cfg.inFlight, ms: cfg.parallelMs });
          const serverCpu = (await bench.counters()).cpu - before.cpu;
          const result = { sequential: shape(seq), parallel: shape(par, serverCpu) };
          rounds.get(c.id)!.push(result);
          ctx.log(
            `  uncontended ${c.id} round ${round + 1}: 1 in flight p50 ${ms(result.sequential.p50)} ` +
              `(${result.sequential.opsPerSecond.toFixed(0)}/s, ${result.sequential.cpuPerPair?.toFixed(0)} µs CPU), ` +
              `${cfg.inFlight} in flight ${result.parallel.opsPerSecond.toFixed(0)}/s ` +
              `(${result.parallel.cpuPerPair?.toFixed(0)} µs CPU per pair, ` +
              `Redis ${result.parallel.serverCpuPerPair?.toFixed(1)} µs)`,
          );
        });
      }
    }
    const merge = (list: Shape[]): Shape => ({
      ...medianSummary(list),
      opsPerSecond: median(list.map((r) => r.opsPerSecond)),
      cpuPerPair: median(list.map((r) => r.cpuPerPair ?? Number.NaN)),
      ...(list[0]?.serverCpuPerPair === undefined
        ? {}
        : { serverCpuPerPair: median(list.map((r) => r.serverCpuPerPair ?? Number.NaN)) }),
    });
    const { floors: measured, contenders } = split(
      summaries(rounds, (list) => ({
        sequential: merge(list.map((r) => r.sequential)),
        parallel: merge(list.map((r) => r.parallel)),
        rounds: list,
      })),
    );
    return {
      redisVersion: await bench.product(),
      settings: { ...cfg },
      contenders,
      ...(Object.keys(measured).length === 0 ? {} : { floors: measured }),
    };
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await bench.stop();
    if (ctx.options.profile !== undefined)
      ctx.log(`  CPU profiles: ${join(ctx.options.profile, 'uncontended-*.cpuprofile')}`);
  }
}

/** The floors' figures apart from the contenders', by driver. */
function split(all: Record<string, Pairs>): {
  floors: Record<string, Pairs>;
  contenders: Record<string, Pairs>;
} {
  const floors: Record<string, Pairs> = {};
  const contenders: Record<string, Pairs> = {};
  for (const [id, r] of Object.entries(all)) {
    if (id.startsWith(FLOOR_PREFIX)) floors[id.slice(FLOOR_PREFIX.length)] = r;
    else contenders[id] = r;
  }
  return { floors, contenders };
}
