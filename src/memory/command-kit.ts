import type { MemoryBackend, MemoryClient } from './backend.ts';

/** One command of the emulated server. */
export interface CommandSpec {
  /** Arguments after the name, at least. */
  readonly arity: number;
  /**
   * A read-only command: once it has run, tracking of the keys it read is armed for the caller,
   * inside a script too (Redis >= 7.2's rule: only the keys a script's reads actually touch).
   */
  readonly read?: true;
  /** Replies with a status (`+OK`), which a script sees as `{ok = ...}`, not as a string. */
  readonly status?: true;
  run(store: MemoryBackend, args: readonly string[], by: MemoryClient | undefined): unknown;
}

export const SYNTAX = 'ERR syntax error';

/** A 64-bit integer argument as Redis reads it. */
export function integer(text: string | undefined): number {
  if (text === undefined || !/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new Error('ERR value is not an integer or out of range');
  }
  return Number(text);
}

let lastMicros = 0;

/**
 * The emulated server's clock (what TIME returns), in microseconds since the epoch: the wall
 * clock at process start plus the monotonic clock since, so that it never goes back and a test
 * that fakes `Date.now` (a client with a skewed clock) does not move it.
 */
export function serverMicros(): number {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  if (now > lastMicros) lastMicros = now;
  return lastMicros;
}

/**
 * A time on the emulated server's clock (epoch ms, as PXAT and PEXPIREAT take it) on the store's
 * monotonic clock, which its TTLs run on: a key set to expire at `epochMs` expires when TIME
 * reaches it, as on Redis, where expiry and TIME read one clock.
 */
export const monotonicAt = (epochMs: number): number => epochMs - performance.timeOrigin;

/** Words after the fixed arguments (`WITHSCORES`, `COUNT n`...), upper-cased for matching. */
export const upper = (args: readonly string[], from: number): string[] =>
  args.slice(from).map((a) => a.toUpperCase());
