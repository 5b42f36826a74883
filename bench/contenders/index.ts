import { crossProcessFloor, directGrantFloor } from './floor.ts';
import { leasehold } from './leasehold.ts';
import { redisSemaphore, redisSemaphoreTuned } from './redis-semaphore.ts';
import { redlock, redlockTuned } from './redlock.ts';
import { redlockUniversal, redlockUniversalTuned } from './redlock-universal.ts';
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
];

/** Run beside the contenders by one scenario and divided by in the report, never listed as one. */
const floors: readonly Contender[] = [crossProcessFloor, directGrantFloor];

/** Opt-in modes measured by the scenarios that ask for them (the idle-waiter handoff, the load chart). */
export const modes: readonly Contender[] = [
  leasehold('node-redis', 'current', true),
  leasehold('ioredis', 'current', true),
];

export function contender(id: string): Contender {
  const found =
    contenders.find((c) => c.id === id) ?? floors.find((c) => c.id === id) ?? modes.find((c) => c.id === id);
  if (found === undefined) throw new Error(`unknown contender ${id}`);
  return found;
}
