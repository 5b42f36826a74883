import type { MemoryBackend, MemoryClient } from './backend.ts';

/** One command of the emulated server. */
export interface CommandSpec {
  /** Arguments after the name, at least. */
  readonly arity: number;
  /**
   * A read: once it has run, tracking of the command's keys is armed (inside a script: of the
   * script's declared KEYS, as Redis 7.0 does).
   */
  readonly read?: true;
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

/** Words after the fixed arguments (`WITHSCORES`, `COUNT n`...), upper-cased for matching. */
export const upper = (args: readonly string[], from: number): string[] =>
  args.slice(from).map((a) => a.toUpperCase());
