import { crossProcessFloor, directGrantFloor } from './floor.ts';
import { leasehold } from './leasehold.ts';
import { redisSemaphore, redisSemaphorePolls, redisSemaphoreTuned } from './redis-semaphore.ts';
import { redlock, redlockPolls, redlockTuned } from './redlock.ts';
import { redlockUniversal, redlockUniversalTuned } from './redlock-universal.ts';
import { semaphoreContenders } from './semaphores.ts';
import type { Contender } from './types.ts';

/**
 * Every contender, in report order; each baseline build (bench --baseline=<commit>) right after
 * the same driver on this tree, so that tables read before/after line by line.
 */
export const contenders: readonly Contender[] = [
  leasehold('node-redis'),
  leasehold('node-redis', 'baseline'),
  leasehold('ioredis'),
  leasehold('ioredis', 'baseline'),
  redlock,
  redlockTuned,
  redisSemaphore,
  redisSemaphoreTuned,
  redlockUniversal,
  redlockUniversalTuned,
  // Run only where their `scenarios` say: leasehold's low-latency mode (handoffs, idle load) and
  // the peers at longer poll intervals (the latency-versus-load chart of section 2b).
  leasehold('node-redis', 'current', true),
  leasehold('ioredis', 'current', true),
  ...redisSemaphorePolls,
  ...redlockPolls,
  // Semaphores of limit 1 in the handoff scenarios: direct grants of permits against polling.
  ...semaphoreContenders,
];

/** Run beside the contenders by one scenario and divided by in the report, never listed as one. */
const floors: readonly Contender[] = [crossProcessFloor, directGrantFloor];

/** Opt-in modes measured by the scenarios that ask for them (the idle-waiter handoff, the load chart). */
export const modes: readonly Contender[] = [
  leasehold('node-redis', 'current', true),
  leasehold('ioredis', 'current', true),
];

export function contender(id: string): Contender {
  const found = contenders.find((c) => c.id === id) ?? floors.find((c) => c.id === id);
  if (found === undefined) throw new Error(`unknown contender ${id}`);
  return found;
}
