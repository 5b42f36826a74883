import { setTimeout as sleep } from 'node:timers/promises';
import { Bench, type Rates } from '../lib/redis.ts';
import { median } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { CpuSample } from '../workers/protocol.ts';
import { type Context, guard, lockName, type Measured, order, summaries } from './context.ts';

export interface IdleRound extends Rates {
  /** CPU of the process holding the waiters, percent of one core. */
  waiterCpuPercent: number;
}

export type IdleResult = Measured<{
  commandsPerSecond: number;
  readsPerSecond: number;
  redisCpuPercent: number;
  waiterCpuPercent: number;
  rounds: IdleRound[];
}>;

/**
 * Scenario 5: Redis load while nothing happens. This process holds a lock (with the contender's
 * automatic extension running) and a worker process has `waiters` callers waiting for it.
 */
export async function idle(ctx: Context): Promise<IdleResult> {
  const cfg = ctx.config.idle;
  const bench = await Bench.start();
  const worker = await Worker.spawn(300);
  const rounds = new Map<string, IdleRound[]>(ctx.contenders.map((c) => [c.id, []]));
  try {
    for (let round = 0; round < cfg.rounds; round++) {
      for (const c of order(ctx.contenders, round)) {
        await guard(ctx, 'idle', c.id, async () => {
          const client = await c.connect(bench.url);
          try {
            await worker.call({ cmd: 'init', contender: c.id, url: bench.url });
            const name = lockName('idle', c.id, round);
            const lease = await client.acquire(name, { ttl: cfg.ttl });
            const tag = `idle-${round}`;
            const waiting = worker.wait(c.id, Array<string>(cfg.waiters).fill(name), cfg.ttl, tag);
            await sleep(cfg.settleMs);
            const cpu0 = await worker.call<CpuSample>({ cmd: 'cpu' });
            const a = await bench.counters();
            await sleep(cfg.windowMs);
            const b = await bench.counters();
            const cpu1 = await worker.call<CpuSample>({ cmd: 'cpu' });
            worker.notify({ notice: 'abort', tag });
            const result = await waiting;
            await lease.release();
            const rates = Bench.rates(a, b);
            // The two cpu calls are themselves IPC round trips: negligible against seconds of window.
            const entry = { ...rates, waiterCpuPercent: ((cpu1.cpu - cpu0.cpu) / (cpu1.t - cpu0.t)) * 100 };
            rounds.get(c.id)!.push(entry);
            ctx.log(
              `  idle ${c.id} round ${round + 1}: ${rates.commandsPerSecond.toFixed(1)} commands/s, ` +
                `redis cpu ${rates.cpuPercent.toFixed(1)} %, waiter process cpu ${entry.waiterCpuPercent.toFixed(1)} %` +
                (result.acquired.length > 0
                  ? ` (${result.acquired.length} waiters acquired a held lock!)`
                  : ''),
            );
          } finally {
            await worker.call({ cmd: 'close', contender: c.id }).catch(() => {});
            await client.close();
          }
        });
      }
    }
    const contenders = summaries(rounds, (list) => ({
      commandsPerSecond: median(list.map((r) => r.commandsPerSecond)),
      readsPerSecond: median(list.map((r) => r.readsPerSecond)),
      redisCpuPercent: median(list.map((r) => r.cpuPercent)),
      waiterCpuPercent: median(list.map((r) => r.waiterCpuPercent)),
      rounds: list,
    }));
    return { redisVersion: await bench.product(), settings: { ...cfg }, contenders };
  } finally {
    await worker.stop();
    await bench.stop();
  }
}
