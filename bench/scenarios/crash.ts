import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from '../contenders/types.ts';
import { Bench, lockKeys } from '../lib/redis.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import { type Context, guard, lockName, type Measured, ms, order } from './context.ts';

export interface CrashResult
  extends Measured<{
    /** Waiter's acquire time minus the dead holder's key expiry, ms. */
    excess: Summary;
    /** TTL the key had left when the holder was gone. */
    remaining: Summary;
    /** Waiter acquired before the key's expiry (would mean two holders). */
    early: number;
    /** Samples whose key was already gone when read (not counted). */
    skipped: number;
    samples: number[];
  }> {
  /** Contenders of a round ran at the same time (quick runs). */
  concurrent: boolean;
}

/**
 * Scenario 4: a holder process is SIGKILLed while another process waits for its locks. The waiter
 * cannot acquire before the key expires; what counts is how long it waits beyond that moment.
 * Each sample is one lock name: the holder takes `samples` locks a little apart (so their expiries
 * differ), the waiter waits on all of them, the holder is killed, and PTTL read right after the
 * kill gives each key's expiry on the local clock.
 */
export async function crash(ctx: Context): Promise<CrashResult> {
  const cfg = ctx.config.crash;
  const bench = await Bench.start();
  const waiter = await Worker.spawn(100);
  const perContender = new Map<
    string,
    { excess: number[]; remaining: number[]; early: number; skipped: number }
  >(ctx.contenders.map((c) => [c.id, { excess: [], remaining: [], early: 0, skipped: 0 }]));
  try {
    const { offset } = await waiter.clockOffset();
    const ready = new Set<string>();
    for (const c of ctx.contenders) {
      const ok = await guard(ctx, 'crash', c.id, () =>
        waiter.call({ cmd: 'init', contender: c.id, url: bench.url }),
      );
      if (ok !== undefined) ready.add(c.id);
    }
    for (let round = 0; round < cfg.rounds; round++) {
      // Holders for the whole round start before any measurement (a process start is CPU-heavy).
      const holders = await Promise.all(ctx.contenders.map((_, i) => Worker.spawn(200 + i)));
      const runOne = async (c: Contender, i: number) => {
        const holder = holders[i]!;
        try {
          if (!ready.has(c.id)) return;
          await guard(ctx, 'crash', c.id, async () => {
            await holder.call({ cmd: 'init', contender: c.id, url: bench.url });
            const names = Array.from({ length: cfg.samples }, (_, i) => lockName('crash', c.id, round, i));
            const gap = Math.round(cfg.ttl / 2 / cfg.samples);
            await holder.hold(c.id, names, cfg.ttl, gap, 1);
            const keys = await Promise.all(
              names.map(async (name) => (await lockKeys(bench.admin, c, name))[0] ?? name),
            );
            const waiting = waiter.wait(c.id, names, cfg.ttl, `crash-${round}-${c.id}`);
            await sleep(200 + Math.random() * (cfg.ttl / 4));
            const killedAt = await holder.kill();
            const expiries = await bench.expiries(keys);
            const result = await waiting;
            const stats = perContender.get(c.id)!;
            const excess: number[] = [];
            for (const { name, t } of result.acquired) {
              const expiry = expiries[names.indexOf(name)] ?? Number.NaN;
              if (Number.isNaN(expiry)) {
                stats.skipped++;
                continue;
              }
              const delay = t - offset - expiry;
              if (delay < -1) stats.early++;
              excess.push(delay);
            }
            stats.excess.push(...excess);
            stats.remaining.push(...expiries.filter((e) => !Number.isNaN(e)).map((e) => e - killedAt));
            if (result.failed.length > 0) ctx.log(`  crash ${c.id}: waiter failed: ${result.failed[0]}`);
            ctx.log(
              `  crash ${c.id} round ${round + 1}: waited beyond expiry p50 ${ms(summarize(excess).p50)}`,
            );
          });
        } finally {
          await holder.kill();
        }
      };
      const list = order(ctx.contenders, round);
      if (cfg.concurrent) await Promise.all(list.map(runOne));
      else for (const [i, c] of list.entries()) await runOne(c, i);
    }
    const contenders: CrashResult['contenders'] = {};
    for (const [id, s] of perContender) {
      if (s.excess.length === 0) continue;
      contenders[id] = {
        excess: summarize(s.excess),
        remaining: summarize(s.remaining),
        early: s.early,
        skipped: s.skipped,
        samples: s.excess,
      };
    }
    const { concurrent, ...numbers } = cfg;
    return { redisVersion: await bench.product(), settings: numbers, concurrent, contenders };
  } finally {
    await waiter.stop();
    await bench.stop();
  }
}
