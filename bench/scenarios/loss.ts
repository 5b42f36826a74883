import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender, ContenderClient, Held } from '../contenders/types.ts';
import { Bench } from '../lib/redis.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { type Context, guard, lockName, type Measured, ms, order } from './context.ts';

export type LossKind = 'del' | 'takeover';

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

interface Sample {
  kind: LossKind;
  delay: number | undefined;
  early: boolean;
}

/** The delays measured (a sample that never heard, or heard before the event, has none). */
const delaysOf = (samples: readonly Sample[], kind: LossKind) =>
  samples.flatMap((s) => (s.kind === kind && s.delay !== undefined ? [s.delay] : []));

/**
 * Scenario 3: how long a holder takes to learn that its lock is gone, after an external DEL of
 * the key and after a takeover (leasehold: forceAcquire from another connection; peers, which
 * have no takeover call: a SET of the key to another owner's value). Samples run side by side on
 * distinct names, with the events spread over the ttl so that they never coincide.
 */
export async function loss(ctx: Context): Promise<LossResult> {
  const cfg = ctx.config.loss;
  const bench = await Bench.start();
  const perContender = new Map<string, Sample[]>(ctx.contenders.map((c) => [c.id, []]));
  /** Every client opened, closed at the end (a holder too when its taker failed to connect). */
  const open: ContenderClient[] = [];
  const connect = async (c: Contender) => {
    const client = await c.connect(bench.url);
    open.push(client);
    return client;
  };
  try {
    const clients = new Map<string, { holder: ContenderClient; taker: ContenderClient }>();
    for (const c of ctx.contenders)
      await guard(ctx, 'loss', c.id, async () =>
        clients.set(c.id, { holder: await connect(c), taker: await connect(c) }),
      );
    for (let round = 0; round < cfg.rounds; round++) {
      const runOne = (c: Contender) =>
        guard(ctx, 'loss', c.id, async () => {
          const pair = clients.get(c.id);
          if (pair === undefined) return;
          const { holder, taker } = pair;
          const kinds: LossKind[] = [];
          for (let i = 0; i < cfg.samples; i++) kinds.push('del', 'takeover');
          const results = await Promise.all(
            kinds.map(async (kind, i): Promise<Sample> => {
              const name = lockName('loss', c.id, round, kind, i);
              const lease: Held = await holder.acquire(name, { ttl: cfg.ttl });
              const acquiredAt = performance.now();
              let lostAt: number | undefined;
              const lost = new Promise<void>((resolve) => {
                const mark = () => {
                  lostAt = performance.now();
                  resolve();
                };
                if (lease.signal.aborted) mark();
                else lease.signal.addEventListener('abort', mark, { once: true });
              });
              const [key] = await bench.lockKeys(c, name);
              // Spread the events over 10..90 % of the ttl, one slot per sample.
              const slot = (i + Math.random()) / kinds.length;
              await sleep(Math.max(0, acquiredAt + cfg.ttl * (0.1 + 0.8 * slot) - performance.now()));
              const eventAt = performance.now();
              let taken: Held | undefined;
              if (kind === 'del') await bench.admin.del(key ?? name);
              else if (taker.forceAcquire !== undefined) taken = await taker.forceAcquire(name, cfg.ttl);
              else await bench.admin.set(key ?? name, `bench-takeover-${i}`, 'PX', cfg.ttl);
              // Unref'd: the cap's timer, left behind when the signal wins, holds nothing up.
              await Promise.race([lost, sleep(cfg.cap, undefined, { ref: false })]);
              // A lost lock's release can take the library seconds of retries: not awaited.
              lease.release().catch(() => {});
              taken?.release().catch(() => {});
              const early = lostAt !== undefined && lostAt < eventAt;
              return { kind, delay: lostAt === undefined || early ? undefined : lostAt - eventAt, early };
            }),
          );
          perContender.get(c.id)!.push(...results);
          const show = (kind: LossKind) => {
            const never = results.filter((r) => r.kind === kind && r.delay === undefined).length;
            const p50 = summarize(delaysOf(results, kind)).p50;
            return `${kind} p50 ${ms(p50)}${never > 0 ? ` (${never} never)` : ''}`;
          };
          ctx.log(`  loss ${c.id} round ${round + 1}: ${show('del')}, ${show('takeover')}`);
        });
      if (cfg.concurrent) await Promise.all(order(ctx.contenders, round).map(runOne));
      else for (const c of order(ctx.contenders, round)) await runOne(c);
    }
    const contenders: LossResult['contenders'] = {};
    for (const c of ctx.contenders) {
      const samples = perContender.get(c.id)!;
      const clientPair = clients.get(c.id);
      if (clientPair === undefined || samples.length === 0) continue;
      const stats = (kind: LossKind) => {
        const mine = samples.filter((s) => s.kind === kind);
        return {
          ...summarize(delaysOf(mine, kind)),
          never: mine.filter((s) => s.delay === undefined && !s.early).length,
          early: mine.filter((s) => s.early).length,
          method:
            kind === 'del'
              ? 'DEL of the lock key from another connection'
              : clientPair.taker.forceAcquire !== undefined
                ? 'forceAcquire() from another connection'
                : 'SET of the lock key to another value (PX ttl) from another connection',
          samples: mine.map((s) => (s.delay === undefined ? null : s.delay)),
        };
      };
      contenders[c.id] = { del: stats('del'), takeover: stats('takeover') };
    }
    const { concurrent, ...numbers } = cfg;
    return { redisVersion: await bench.product(), settings: numbers, concurrent, contenders };
  } finally {
    for (const client of open) await client.close().catch(() => {});
    await bench.stop();
  }
}
