import type { MemoryBackend, MemoryClient } from './backend.ts';

/** What a script implementation gets: the store, the calling client, and the call's KEYS and ARGV. */
export interface MemoryScriptCall {
  readonly store: MemoryBackend;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  /** The client running the script: writes skip notifying it (NOLOOP). */
  readonly client: MemoryClient;
  /** A read (GET, PTTL, ...) of any key: like Redis 7.0, arms tracking of all declared KEYS. */
  read<T>(value: T): T;
  /**
   * `redis.call()`: runs one command as this script's client and returns its reply (integers as
   * numbers, bulk strings as strings, nil as null, arrays); numbers are sent as Lua sends them,
   * in decimal. A read arms tracking of all declared KEYS, as in Redis 7.0.
   */
  call(...args: (string | number)[]): unknown;
}

/** A JS twin of one `src/scripts/<name>.lua`, returning what the Lua script's reply decodes to. */
export type MemoryScript = (call: MemoryScriptCall) => unknown;

/** ARGV[i + 1] */
export const arg = (call: MemoryScriptCall, i: number): string => call.args[i] ?? '';
/** KEYS[i + 1] */
export const key = (call: MemoryScriptCall, i: number): string => call.keys[i] ?? '';

/** The scripts' `now`: TIME in ms, as `tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`. */
export function nowMs(call: MemoryScriptCall): number {
  const [seconds, micros] = call.call('TIME') as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** A Lua number in a reply: Redis truncates it to an integer. */
export const int = (n: number): number => Math.trunc(n);

/** The first member of a ZRANGE reply (Lua's `[1]`), or undefined. */
export const first = (reply: unknown): string | undefined => (reply as string[])[0];
