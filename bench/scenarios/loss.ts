import type { Contender } from '../contenders/types.ts';
import { Bench } from '../lib/redis.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { LossKind, LossRound, LossSample } from '../workers/loss.ts';
import { type Context, guard, type Measured, ms, order } from './context.ts';

export interface LossStats extends Summary {
  /** Samples where the holder had not heard within `cap` ms. */
  never: number;
  /** Signals that fired before the event (should be 0). */
  early: number;
  /** How the takeover was made for this contender. */
  method: string;
}

export interface LossResult extends Measured<Record<LossKind, LossStats & { samples: (number | null)[] }>> {
  /** Contenders of a round ran at the same time (quick runs). */
  concurrent: boolean;
}

/** The delays measured (a sample that never heard, or heard before the event, has none). */
const delaysOf = (samples: readonly LossSample[], kind: LossKind) =>
  samples.flatMap((s) => (s.kind === kind && s.delay !== null ? [s.delay] : []));

/**
 * Scenario 3: how long a holder takes to learn that its lock is gone, after an external DEL of
 * the key and after a takeover (leasehold: forceAcquire from another connection; peers, which
 * have no takeover call: a SET of the key to another owner's value). Each contender's holder,
 * taker and DELs run in a worker process of its own (bench/workers/loss.ts: the samples).
 */
export async function loss(ctx: Context): Promise<LossResult> {
  const cfg = ctx.config.loss;
  const bench = await Bench.start();
  const measured = new Map<string, LossRound>();
  const workers = new Map<string, Worker>();
  try {
    for (const [i, c] of ctx.contenders.entries()) {
      const worker = await Worker.spawn(400 + i, { gc: true });
      const init = { cmd: 'init', contender: c.id, url: bench.url } as const;
      // One that cannot connect is reported once, and not asked every round.
      if ((await guard(ctx, 'loss', c.id, () => worker.call(init))) === undefined) await worker.stop();
      else workers.set(c.id, worker);
    }
    for (let round = 0; round < cfg.rounds; round++) {
      const runOne = (c: Contender) =>
        guard(ctx, 'loss', c.id, async () => {
          const worker = workers.get(c.id);
          if (worker === undefined) return;
          const { ttl, cap, samples } = cfg;
          const request = { cmd: 'loss', contender: c.id, url: bench.url, round, samples, ttl, cap } as const;
          const result = await worker.call<LossRound>(request);
          measured.set(c.id, {
            ...result,
            samples: [...(measured.get(c.id)?.samples ?? []), ...result.samples],
          });
          const show = (kind: LossKind) => {
            const never = result.samples.filter((r) => r.kind === kind && r.delay === null).length;
            return `${kind} p50 ${ms(summarize(delaysOf(result.samples, kind)).p50)}${never > 0 ? ` (${never} never)` : ''}`;
          };
          ctx.log(`  loss ${c.id} round ${round + 1}: ${show('del')}, ${show('takeover')}`);
        });
      if (cfg.concurrent) await Promise.all(order(ctx.contenders, round).map(runOne));
      else for (const c of order(ctx.contenders, round)) await runOne(c);
    }
    const contenders: LossResult['contenders'] = {};
    for (const [id, { samples, takeover }] of measured) {
      const stats = (kind: LossKind, method: string) => {
        const mine = samples.filter((s) => s.kind === kind);
        return {
          ...summarize(delaysOf(mine, kind)),
          never: mine.filter((s) => s.delay === null && !s.early).length,
          early: mine.filter((s) => s.early).length,
          method,
          samples: mine.map((s) => s.delay),
        };
      };
      contenders[id] = {
        del: stats('del', 'DEL of the lock key from another connection'),
        takeover: stats('takeover', takeover),
      };
    }
    const { concurrent, ...numbers } = cfg;
    return { redisVersion: await bench.product(), settings: numbers, concurrent, contenders };
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop()));
    await bench.stop();
  }
}
