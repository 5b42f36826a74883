/** Options of the primitives other than the mutex, and the checks of their arguments. */

import type { AcquireOptions } from './acquire.ts';
import {
  checkKnownKeys,
  checkName,
  checkObject,
  checkTtl,
  checkWellFormed,
  describe,
  fail,
} from './check.ts';

/** Options of `lh.semaphore()`. */
export interface SemaphoreOptions {
  /**
   * How many permits exist. Every user of one semaphore name must pass the same limit: it is sent
   * with each acquisition, not stored in Redis.
   * @example lh.semaphore('uploads', { limit: 10 })
   */
  limit: number;
}

/** Options of `semaphore.acquire()`: the usual timeout, signal and ttl, plus how many permits. */
export interface SemaphoreAcquireOptions extends AcquireOptions {
  /**
   * Permits to take at once, all or nothing (1..limit). The lease holds them all; they are
   * extended, released and lost together.
   * @default 1
   */
  permits?: number;
}

/** Options of `lh.multiLock()`. */
export interface MultiLockOptions {
  /**
   * Lease validity in ms for this lock's acquisitions (each acquire may pass its own).
   * @default the instance's `ttl`
   */
  ttl?: number;
}

const MAX_LIMIT = 100_000;

/** Validates `{ limit }` and returns the limit. */
export function checkSemaphoreOptions(options: unknown): number {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['limit'], 'semaphore options');
  const limit = o['limit'];
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    fail('limit', `an integer from 1 to ${MAX_LIMIT}`, limit);
  }
  return limit;
}

/**
 * Takes `permits` (default 1) out of a semaphore acquisition's options; the rest are the usual
 * acquire options.
 */
export function checkPermits(
  options: unknown,
  limit: number,
): { permits: number; rest: Record<string, unknown> } {
  const { permits = 1, ...rest } = checkObject(options, 'options');
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1 || permits > limit) {
    fail('permits', `an integer from 1 to the limit (${limit})`, permits);
  }
  return { permits, rest };
}

/** Longest value an election candidate may proclaim, in characters. */
const MAX_VALUE = 65_536;

/** The value of `election.campaign(value)` and `term.proclaim(value)`. */
export function checkElectionValue(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_VALUE) {
    fail('value', `a string of at most ${MAX_VALUE} characters`, value);
  }
  return checkWellFormed(value, 'value');
}

/** Most names one multiLock takes: one script's keys, and one batch per renewal, stay small. */
export const MAX_NAMES = 64;

/** Validates `lh.multiLock(names, options)`; returns the names and the default ttl. */
export function checkMultiLock(
  names: unknown,
  options: unknown,
  defaults: { ttl: number },
): { names: string[]; ttl: number } {
  if (!Array.isArray(names) || names.length === 0) {
    throw new TypeError(
      `leasehold: option "names" must be a non-empty array of lock names; received ${describe(names)}`,
    );
  }
  if (names.length > MAX_NAMES) {
    throw new TypeError(
      `leasehold: option "names" must hold at most ${MAX_NAMES} names; received ${names.length}`,
    );
  }
  const seen = new Set<string>();
  for (const [i, name] of names.entries()) {
    checkName(name, `names[${i}]`);
    if (seen.has(name)) {
      throw new TypeError(
        `leasehold: option "names" must not repeat a name; received ${describe(name)} twice`,
      );
    }
    seen.add(name);
  }
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['ttl'], 'multiLock options');
  return { names: [...names], ttl: o['ttl'] === undefined ? defaults.ttl : checkTtl(o['ttl']) };
}
