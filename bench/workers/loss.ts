// The loss scenario's samples (bench/scenarios/loss.ts), in a worker of the contender's own: in
// the bench's parent (every contender's modules and clients in one heap) a GC pause put a cluster
// of late samples on whichever contender ran then (docs/benchmarks.md, "Loss detection").
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { contender } from '../contenders/index.ts';
import type { ContenderClient, Held } from '../contenders/types.ts';
import { ioredisClient } from '../contenders/util.ts';
import { lockKeys } from '../lib/redis.ts';
import { lockName } from '../scenarios/context.ts';

export type LossKind = 'del' | 'takeover';

/** One round of `samples` DEL and `samples` takeover samples on a contender's holder. */
export type LossRequest = {
  contender: string;
  url: string;
  round: number;
  samples: number;
  ttl: number;
  cap: number;
};

export interface LossSample {
  kind: LossKind;
  /** From the event to the holder's signal, ms; null when it never fired, or fired before. */
  delay: number | null;
  early: boolean;
}

export interface LossRound {
  samples: LossSample[];
  /** How the takeover was made for this contender. */
  takeover: string;
}

/** The taker and the admin connection of each contender, opened at its first round (kept until the worker exits). */
const others = new Map<string, { taker: ContenderClient; admin: Redis }>();

/**
 * Samples run side by side on distinct names, with the events spread over 10-90 % of the ttl so
 * that they never coincide: DEL of the key, or a takeover (forceAcquire from the taker, else a SET
 * of the key to another value), each timed to the holder's signal.
 */
export async function runLoss(holder: ContenderClient, req: LossRequest): Promise<LossRound> {
  const opened = others.get(req.contender) ?? {
    taker: await contender(req.contender).connect(req.url),
    admin: await ioredisClient(req.url),
  };
  others.set(req.contender, opened);
  const { taker, admin } = opened;
  const kinds: LossKind[] = [];
  for (let i = 0; i < req.samples; i++) kinds.push('del', 'takeover');
  const samples = await Promise.all(
    kinds.map(async (kind, i): Promise<LossSample> => {
      const name = lockName('loss', req.contender, req.round, kind, i);
      const lease: Held = await holder.acquire(name, { ttl: req.ttl });
      const acquiredAt = performance.now();
      // Resolves with the time the signal fired, taken then.
      const lost = new Promise<number>((resolve) => {
        const mark = () => resolve(performance.now());
        if (lease.signal.aborted) mark();
        else lease.signal.addEventListener('abort', mark, { once: true });
      });
      const [key = name] = await lockKeys(admin, contender(req.contender), name);
      const slot = (i + Math.random()) / kinds.length;
      await sleep(Math.max(0, acquiredAt + req.ttl * (0.1 + 0.8 * slot) - performance.now()));
      const eventAt = performance.now();
      let taken: Held | undefined;
      if (kind === 'del') await admin.del(key);
      else if (taker.forceAcquire !== undefined) taken = await taker.forceAcquire(name, req.ttl);
      else await admin.set(key, `bench-takeover-${i}`, 'PX', req.ttl);
      // Unref'd: the cap's timer, left behind when the signal wins, holds nothing up.
      const lostAt = await Promise.race([lost, sleep(req.cap, undefined, { ref: false })]);
      // A lost lock's release can take the library seconds of retries: not awaited.
      lease.release().catch(() => {});
      taken?.release().catch(() => {});
      const early = lostAt !== undefined && lostAt < eventAt;
      return { kind, delay: lostAt === undefined || early ? null : lostAt - eventAt, early };
    }),
  );
  const by =
    taker.forceAcquire !== undefined ? 'forceAcquire()' : 'SET of the lock key to another value (PX ttl)';
  return { samples, takeover: `${by} from another connection` };
}
