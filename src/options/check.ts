/**
 * The checkers every option goes through. Bad input throws a TypeError that names the option
 * and the value received, before any network traffic.
 */

import { MIN_TTL } from '../base/clock.ts';
import { CONTROL_CHARACTERS, MAX_OWNER_LENGTH } from '../base/owner.ts';

export { CONTROL_CHARACTERS, MAX_OWNER_LENGTH } from '../base/owner.ts';

/** Validates an `owner` option (TypeError naming it). */
export function checkOwner(value: unknown, option = 'owner'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_OWNER_LENGTH) {
    fail(option, `a non-empty string of at most ${MAX_OWNER_LENGTH} characters`, value);
  }
  if (value.search(CONTROL_CHARACTERS) !== -1) fail(option, 'free of control characters', value);
  return checkWellFormed(value, option);
}

/**
 * A lone surrogate (half of a UTF-16 pair): in a `u` regex a whole pair is one code point, so only
 * lone halves match. Redis receives text as UTF-8, where a lone half becomes U+FFFD: two names
 * that differ only there would share one key, and what inspect() shows would differ from what
 * was given.
 */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Text that reaches Redis as it was given: well-formed UTF-16 (String#isWellFormed). */
export function checkWellFormed(value: string, option: string): string {
  if (LONE_SURROGATE.test(value)) {
    fail(option, 'well-formed Unicode text (a lone surrogate would reach Redis as U+FFFD)', value);
  }
  return value;
}

/** Longest lock name accepted, in characters (keys stay well inside Redis's practical limits). */
export const MAX_NAME_LENGTH = 1024;

/**
 * Longest TTL accepted, in ms (about 24.8 days): the longest delay a single setTimeout honours,
 * so the renewer's and the in-memory backend's timers derived from a TTL never overflow, and an
 * integer Redis's PX takes as is. A lease renews itself every third of its TTL anyway: a longer
 * one would only make a crashed holder's lock take longer to free.
 */
export const MAX_TTL = 2 ** 31 - 1;

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  if (typeof value === 'function') return 'a function';
  return String(value);
}

export function fail(option: string, expected: string, value: unknown): never {
  throw new TypeError(`leasehold: option "${option}" must be ${expected}; received ${describe(value)}`);
}

export function checkName(name: unknown, option = 'name'): string {
  if (typeof name !== 'string' || name.length === 0) fail(option, 'a non-empty string', name);
  if (name.length > MAX_NAME_LENGTH) fail(option, `at most ${MAX_NAME_LENGTH} characters`, name);
  // Keys are `<prefix>:{<name>}...`: a name starting with "}" empties that hash tag, and Redis
  // Cluster then hashes each key whole, scattering one name's keys over several slots.
  if (name.startsWith('}')) {
    throw new TypeError(
      `leasehold: option "${option}" must not start with "}" (the keys' hash tag would be empty); received ${describe(name)}`,
    );
  }
  return checkWellFormed(name, option);
}

/** A positive, finite duration in ms (`ttl`, `retryDelay`). */
export function checkDuration(value: unknown, option: string, max = MAX_TTL): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > max) {
    fail(option, `a finite number of milliseconds > 0 and <= ${max}`, value);
  }
  return value;
}

/** A lease TTL: a duration long enough that a lease can be valid when it arrives (see MIN_TTL). */
export function checkTtl(value: unknown, option = 'ttl'): number {
  checkDuration(value, option);
  if ((value as number) < MIN_TTL) {
    fail(option, `at least ${MIN_TTL} ms (1% + 2 ms of clock drift, plus 10 ms to read the reply)`, value);
  }
  return value as number;
}

/**
 * A wait bound in ms: 0 (one attempt), a positive number, or Infinity. Any size: waits go
 * through engine/timer.ts's after(), so one beyond setTimeout's 2^31-1 ms still waits that long.
 */
export function checkTimeout(value: unknown, option = 'timeout'): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    fail(option, 'a number of milliseconds >= 0 (or Infinity)', value);
  }
  return value;
}

export function checkSignal(value: unknown, option = 'signal'): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) fail(option, 'an AbortSignal', value);
  return value;
}

export function checkObject(value: unknown, option: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(option, 'an object', value);
  return value as Record<string, unknown>;
}

/** Rejects keys the caller did not mean (a typo like `tll` would otherwise be ignored). */
export function checkKnownKeys(
  options: Record<string, unknown>,
  known: readonly string[],
  where: string,
): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `leasehold: unknown option "${key}" in ${where}; known options: ${known.join(', ')}`,
      );
    }
  }
}
