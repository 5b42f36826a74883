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

/** Words after the fixed arguments (`WITHSCORES`, `COUNT n`...), upper-cased for matching. */
export const upper = (args: readonly string[], from: number): string[] =>
  args.slice(from).map((a) => a.toUpperCase());
