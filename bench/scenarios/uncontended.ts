import type { ContenderClient } from '../contenders/types.ts';
import { Bench } from '../lib/redis.ts';
import { median, medianSummary, type Summary, summarize } from '../lib/stats.ts';
import { type Context, guard, lockName, ms, order } from './context.ts';

export interface UncontendedResult {
  redisVersion: string;
  settings: Record<string, number>;
  contenders: Record<
    string,
    {
      sequential: Summary & { opsPerSecond: number };
      parallel: Summary & { opsPerSecond: number };
      rounds: {
        sequential: Summary & { opsPerSecond: number };
        parallel: Summary & { opsPerSecond: number };
      }[];
    }
  >;
}

/** One acquire + release pair, ms. */
async function pair(client: ContenderClient, name: string, ttl: number): Promise<number> {
  const started = performance.now();
  const lease = await client.acquire(name, { ttl });
  await lease.release();
  return performance.now() - started;
}

/** Scenario 1: acquire + release on free locks, one at a time and with many in flight. */
export async function uncontended(ctx: Context): Promise<UncontendedResult> {
  const cfg = ctx.config.uncontended;
  const bench = await Bench.start();
  const clients = new Map<string, ContenderClient>();
  const rounds = new Map<string, UncontendedResult['contenders'][string]['rounds']>();
  try {
    for (const c of ctx.contenders) {
      const client = await guard(ctx, 'uncontended', c.id, () => c.connect(bench.url));
      if (client === undefined) continue;
      clients.set(c.id, client);
      rounds.set(c.id, []);
    }
    for (let round = 0; round < cfg.rounds; round++) {
      for (const c of order(ctx, round)) {
        const client = clients.get(c.id);
        if (client === undefined) continue;
        await guard(ctx, 'uncontended', c.id, async () => {
          const name = lockName('uncontended', c.id, round);
          for (let i = 0; i < cfg.warmupOps; i++) await pair(client, name, cfg.ttl);

          const seq: number[] = [];
          const seqStart = performance.now();
          for (let i = 0; i < cfg.sequentialOps; i++) seq.push(await pair(client, name, cfg.ttl));
          const seqSeconds = (performance.now() - seqStart) / 1000;

          const par: number[] = [];
          const parStart = performance.now();
          const deadline = parStart + cfg.parallelMs;
          await Promise.all(
            Array.from({ length: cfg.inFlight }, async (_, lane) => {
              const laneName = `${name}:lane${lane}`;
              while (performance.now() < deadline) par.push(await pair(client, laneName, cfg.ttl));
            }),
          );
          const parSeconds = (performance.now() - parStart) / 1000;

          const result = {
            sequential: { ...summarize(seq), opsPerSecond: seq.length / seqSeconds },
            parallel: { ...summarize(par), opsPerSecond: par.length / parSeconds },
          };
          rounds.get(c.id)!.push(result);
          ctx.log(
            `  uncontended ${c.id} round ${round + 1}: 1 in flight p50 ${ms(result.sequential.p50)} ` +
              `(${result.sequential.opsPerSecond.toFixed(0)}/s), ${cfg.inFlight} in flight ` +
              `${result.parallel.opsPerSecond.toFixed(0)}/s`,
          );
        });
      }
    }
    const contenders: UncontendedResult['contenders'] = {};
    for (const [id, list] of rounds) {
      if (list.length === 0) continue;
      contenders[id] = {
        sequential: {
          ...medianSummary(list.map((r) => r.sequential)),
          opsPerSecond: median(list.map((r) => r.sequential.opsPerSecond)),
        },
        parallel: {
          ...medianSummary(list.map((r) => r.parallel)),
          opsPerSecond: median(list.map((r) => r.parallel.opsPerSecond)),
        },
        rounds: list,
      };
    }
    return {
      redisVersion: await bench.version(),
      settings: { ...cfg },
      contenders,
    };
  } finally {
    for (const client of clients.values()) await client.close().catch(() => {});
    await bench.stop();
  }
}
