/**
 * The checkers every option goes through. Bad input throws a TypeError that names the option
 * and the value received, before any network traffic.
 */

import { MIN_TTL } from '../engine/clock.ts';

/** Longest owner accepted, in characters: it is stored with every lease and waiter. */
export const MAX_OWNER_LENGTH = 200;

/**
 * Control characters, which an owner may not hold: they would garble the CLI's and dashboard's
 * one-line views. Global, for replace(); search() ignores lastIndex, test() would not.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/** Validates an `owner` option (TypeError naming it). */
export function checkOwner(value: unknown, option = 'owner'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_OWNER_LENGTH) {
    fail(option, `a non-empty string of at most ${MAX_OWNER_LENGTH} characters`, value);
  }
  if (value.search(CONTROL_CHARACTERS) !== -1) fail(option, 'free of control characters', value);
  return value;
}

/** Longest lock name accepted, in characters (keys stay well inside Redis's practical limits). */
export const MAX_NAME_LENGTH = 1024;

/** Longest TTL accepted: Redis's PX wants an integer that fits comfortably in 2^31 days. */
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
  return name;
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

/** A wait bound in ms: 0 (one attempt), a positive finite number, or Infinity. */
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
