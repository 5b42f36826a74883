// Scenario 6, how cost grows (issue 15), on one redis-server:
//   held leases     N leases held by one fresh process (1k, 10k, 100k): heap per lease, Redis and
//                   client CPU per renewal cycle (scale-held.ts)
//   waiters curve   1 to 1,000 waiters on one lock name over 1, 4, 16 processes: heap per waiter,
//                   handoff gap, idle load, acquire attempts per handoff (scale-waiters.ts)
import type { Config } from '../config.ts';
import { Bench } from '../lib/redis.ts';
import { Worker } from '../lib/workers.ts';
import { type Context, fail } from './context.ts';
import { type HeldCell, type HeldOutcome, heldCell } from './scale-held.ts';
import { cells, type WaitersCell, waitersCell } from './scale-waiters.ts';

export interface ScaleResult {
  redisVersion: string;
  settings: Config['scale'];
  held: HeldOutcome[];
  waiters: WaitersCell[];
}

/**
 * A contender's held-leases cell that the headline, the targets and the before/after table quote:
 * 10,000 leases, or the largest number measured below that (a quick run stops at 1,000).
 */
export function heldFor(result: ScaleResult | undefined, id: string): HeldCell | undefined {
  const cells = (result?.held ?? []).filter((c): c is HeldCell => c.contender === id && !('skipped' in c));
  return cells.find((c) => c.leases === 10_000) ?? cells.filter((c) => c.leases < 10_000).at(-1);
}

/** A contender's waiters cell with the most waiters in one process. */
export function waitersFor(result: ScaleResult | undefined, id: string): WaitersCell | undefined {
  return (result?.waiters ?? []).filter((c) => c.contender === id && c.processes === 1).at(-1);
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;

export async function scale(ctx: Context): Promise<ScaleResult> {
  const cfg = ctx.config.scale;
  const bench = await Bench.start();
  const result: ScaleResult = { redisVersion: '', settings: cfg, held: [], waiters: [] };
  const most = Math.max(...cfg.waiters.processes);
  // --expose-gc: each waiters cell samples the heap its callers take.
  const pool = await Promise.all(Array.from({ length: most }, (_, i) => Worker.spawn(i, { gc: true })));
  try {
    result.redisVersion = await bench.product();
    for (const c of ctx.contenders) {
      for (const leases of cfg.held.leases) {
        try {
          const r = await heldCell(bench, c, leases, cfg.held);
          result.held.push(r);
          ctx.log(
            'skipped' in r
              ? `  scale ${c.id} ${leases} leases: ${r.skipped}`
              : `  scale ${c.id} ${leases} leases: heap ${kib(r.heapPerLease)}/lease, cycle ${r.cycleMs.toFixed(0)} ms, ` +
                  `per cycle Redis ${r.perCycle.redisCpuMs.toFixed(1)} ms, client ${r.perCycle.clientCpuMs.toFixed(1)} ms, ` +
                  `${r.perCycle.reads.toFixed(0)} reads; acquired in ${(r.acquireMs / 1000).toFixed(1)} s, lost ${r.lost}`,
          );
        } catch (error) {
          fail(ctx, 'scale', `${c.id}, ${leases} held`, error);
        }
        // Whatever a capped or failed cell left behind must not weigh on the next one.
        await bench.admin.flushall();
      }
      for (const { waiters, processes } of cells(cfg.waiters)) {
        const cell = `${waiters} waiters / ${processes} processes`;
        try {
          await Promise.all(
            pool.slice(0, processes).map((w) => w.call({ cmd: 'init', contender: c.id, url: bench.url })),
          );
          const r = await waitersCell(bench, pool, c, waiters, processes, cfg.waiters, ctx.log);
          result.waiters.push(r);
          ctx.log(
            `  scale ${c.id} ${cell}: gap p50 ${r.gap.p50.toFixed(3)} ms over ${r.handoffs}${r.capped ? ' (capped)' : ''}, ` +
              `${r.attempts.toFixed(1)} attempts per handoff; idle ${r.idle.commandsPerSecond.toFixed(1)} commands/s, ` +
              `waiters ${r.idle.waiterCpuPercent.toFixed(1)} % CPU${r.failed.length > 0 ? `; FAILED ${r.failed.length}: ${r.failed[0]}` : ''}`,
          );
        } catch (error) {
          fail(ctx, 'scale', `${c.id}, ${cell}`, error);
        }
      }
      await Promise.allSettled(pool.map((w) => w.call({ cmd: 'close', contender: c.id })));
      await bench.admin.flushall();
    }
    return result;
  } finally {
    await Promise.all(pool.map((w) => w.stop()));
    await bench.stop();
  }
}
