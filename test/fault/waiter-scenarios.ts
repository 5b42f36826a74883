// Scenarios of the fault matrix about waiters (issue 38): a waiter that cannot take the lock a
// release grants it, because it is paused or partitioned (its connections black-holed: on
// PostgreSQL its LISTEN connection dies silently with them). The name must go to a live worker
// within the claim window (docs/direct-grants.md), not at the unable waiter's TTL: the workers
// run with a 4 s TTL here, so that the two are far apart.
import { setTimeout as sleep } from 'node:timers/promises';
import type { MatrixScenario } from './scenarios.ts';
import type { FaultContext, FaultWorker } from './types.ts';

const WAITER_TTL = 4_000;

/**
 * How soon after the holder's last check of its signal a worker must hold the lock again: that
 * holder's last write and the pause after it (a tenth and a fifth of the TTL, engine.ts), its
 * release, then the claim window (500 ms) and a round trip, with a second to spare on a loaded
 * machine. A grant kept for the unable waiter's TTL takes 4 s more.
 */
const freeAfterHeal = (ttl: number) => ttl / 10 + ttl / 5 + 1_500;

/** Rounds of: a waiter made unable to take the lock, the holder's release, the unable one back. */
async function unableWaiter(
  ctx: FaultContext,
  rounds: number,
  disable: (w: FaultWorker) => void,
  enable: (w: FaultWorker) => void,
): Promise<void> {
  // A holder, the unable waiter, and a live one to take the lock: with two workers nobody could.
  if (ctx.workers.length < 3) throw new Error('the waiter scenarios need 3 workers or more');
  for (let r = 0; r < rounds; r++) {
    const holder = await ctx.holder();
    const waiters = ctx.workers.filter((w) => w !== holder);
    const target = waiters[r % waiters.length]!;
    // Its attempts register it for a grant (from its second one): let them.
    await sleep(200);
    disable(target);
    ctx.note(`${target.id} made unable to take a grant while ${holder.id} holds`);
    await ctx.nextCheck(true);
    // From the holder's last check on: its last write, its release, and a live worker's turn.
    ctx.healed();
    await sleep(ctx.ttl);
    enable(target);
    await sleep(ctx.ttl);
  }
}

export const WAITER_SCENARIOS: readonly MatrixScenario[] = [
  {
    id: 'waiter-sigstop',
    title: 'a waiter SIGSTOPped while a release grants it the lock (a GC pause, a frozen VM)',
    ttl: () => WAITER_TTL,
    freeAfterHeal,
    advice: "Nothing: a grant its waiter does not claim lapses at the claim window's end.",
    fault: (ctx, rounds) =>
      unableWaiter(
        ctx,
        rounds,
        (w) => ctx.pause(w),
        (w) => ctx.resume(w),
      ),
  },
  {
    id: 'waiter-partition',
    needsProxy: true,
    title: "a waiter's connections black-holed while a release grants it the lock (its grant message lost)",
    ttl: () => WAITER_TTL,
    freeAfterHeal,
    advice: "Nothing: a grant its waiter does not claim lapses at the claim window's end.",
    fault: (ctx, rounds) =>
      unableWaiter(
        ctx,
        rounds,
        (w) => {
          for (const proxy of w.proxies) proxy.blackhole(true);
        },
        (w) => {
          for (const proxy of w.proxies) {
            proxy.resetAll();
            proxy.blackhole(false);
          }
        },
      ),
  },
];
