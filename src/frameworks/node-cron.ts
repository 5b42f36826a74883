/**
 * `leasehold/node-cron`: node-cron's run coordinator, so that a task with `distributed: true` runs
 * each fire once across every replica (docs/scheduled-jobs.md). node-cron (>= 4.5) asks the
 * coordinator before each fire with a key of its own, `<task name>:<the fire's scheduled time>`,
 * the same on every replica whatever its clock; the first replica to ask holds that key's lock
 * while the job runs and, after it, until `minHold` after the grant, so that a replica whose timer
 * fires late (clocks and timers differ by milliseconds, and by more) finds it taken.
 *
 * @example
 * import cron from 'node-cron';
 * import { runCoordinator } from 'leasehold/node-cron';
 * cron.schedule('* * * * *', purge, { name: 'purge', distributed: true, runCoordinator: runCoordinator(lh) });
 */
import type { Lease } from '../lease.ts';
import type { Leasehold } from '../leasehold.ts';
import { checkKnownKeys, checkObject, fail, MAX_TTL } from '../options/index.ts';

/** What node-cron asks of a run coordinator (its `RunCoordinator`, as node-cron 4.5+ declares it). */
export interface RunCoordinator {
  /** Whether this replica runs the fire `key`; the answer holds for `ttlMs` (node-cron's `distributedLease`). */
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  /** The fire `key` ended (its job returned or threw). */
  onComplete(key: string): Promise<void>;
}

export interface RunCoordinatorOptions {
  /**
   * Put before node-cron's key to make the lock name, so that fires do not share names with
   * other locks.
   * @default 'cron:'
   */
  prefix?: string;
  /**
   * How long a fire stays taken after it was granted, at least, ms: longer than replicas' clocks
   * and timers can differ. Default: the `ttlMs` node-cron passes (its `distributedLease`, 30 s
   * unless the task sets it).
   */
  minHold?: number;
  /** The lease's TTL while the job runs (it is renewed). Default: node-cron's `ttlMs`. */
  ttl?: number;
}

/**
 * A RunCoordinator for node-cron on `lh`: one lock per fire, taken with one attempt (a replica
 * that finds it taken skips the fire), held while the job runs, kept `minHold` after the grant.
 * A fire whose coordinator cannot reach Redis is skipped (node-cron fails closed).
 */
export function runCoordinator(lh: Leasehold, options?: RunCoordinatorOptions): RunCoordinator {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['prefix', 'minHold', 'ttl'], 'runCoordinator options');
  const prefix = o['prefix'] ?? 'cron:';
  if (typeof prefix !== 'string') fail('prefix', 'a string', prefix);
  const duration = (name: string) => {
    const value = o[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 1 || value > MAX_TTL) {
      fail(name, `a number of milliseconds >= 1 and <= ${MAX_TTL}`, value);
    }
    return value;
  };
  const minHold = duration('minHold');
  const ttl = duration('ttl');
  const running = new Map<string, Lease>();
  return {
    async shouldRun(key, ttlMs) {
      const lease = await lh.tryAcquire(`${prefix}${key}`, { ttl: ttl ?? ttlMs, minHold: minHold ?? ttlMs });
      if (lease === undefined) return false;
      running.set(key, lease);
      return true;
    },
    async onComplete(key) {
      const lease = running.get(key);
      running.delete(key);
      await lease?.release();
    },
  };
}
