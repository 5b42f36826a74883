import { directGrantFloor } from './floor.ts';
import { leasehold } from './leasehold.ts';
import { pgContenders } from './postgres.ts';
import {
  redisSemaphore,
  redisSemaphorePolls,
  redisSemaphoreSemaphores,
  redisSemaphoreTuned,
} from './redis-semaphore.ts';
import { redlock, redlockPolls, redlockTuned } from './redlock.ts';
import { redlockUniversal, redlockUniversalTuned } from './redlock-universal.ts';
import { scriptFloors } from './script-floor.ts';
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
  // The other primitives in the handoff scenarios: leasehold's semaphore of limit 1 (direct grants
  // of permits) against redis-semaphore's polling Semaphore, and its fair lock and write lease,
  // which no peer has.
  leasehold('node-redis', 'current', false, 'semaphore'),
  leasehold('node-redis', 'baseline', false, 'semaphore'),
  leasehold('ioredis', 'current', false, 'semaphore'),
  leasehold('ioredis', 'baseline', false, 'semaphore'),
  ...redisSemaphoreSemaphores,
  leasehold('node-redis', 'current', false, 'fair'),
  leasehold('ioredis', 'current', false, 'fair'),
  leasehold('node-redis', 'current', false, 'write'),
  leasehold('ioredis', 'current', false, 'write'),
];

/**
 * Run by one scenario each, never listed among the Redis contenders: the direct-grant floor (run beside
 * them in the handoff scenarios), leasehold's scripts on its bare clients (beside it in the
 * uncontended one) and the PostgreSQL contenders.
 */
const others: readonly Contender[] = [directGrantFloor, ...scriptFloors, ...pgContenders];

export function contender(id: string): Contender {
  const found = contenders.find((c) => c.id === id) ?? others.find((c) => c.id === id);
  if (found === undefined) throw new Error(`unknown contender ${id}`);
  return found;
}
