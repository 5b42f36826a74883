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
}

/** A JS twin of one `src/scripts/<name>.lua`, returning what the Lua script's reply decodes to. */
export type MemoryScript = (call: MemoryScriptCall) => unknown;

const arg = (call: MemoryScriptCall, i: number): string => call.args[i] ?? '';
const key = (call: MemoryScriptCall, i: number): string => call.keys[i] ?? '';

/**
 * Scripts the memory backend runs by name, one per Lua script of the mutex. Other primitives
 * add their own with `defineMemoryScript`; a script without a twin fails with an `ERR` reply.
 */
const registry = new Map<string, MemoryScript>([
  [
    'acquire',
    (c) => {
      const { store, client } = c;
      if (store.set(key(c, 0), arg(c, 0), { nx: true, px: Number(arg(c, 1)) }, client)) {
        store.incr(key(c, 1), client);
        return [1, c.read(store.get(key(c, 1)))];
      }
      return [0, c.read(store.pttl(key(c, 0)))];
    },
  ],
  [
    'force',
    (c) => {
      const { store, client } = c;
      store.set(key(c, 0), arg(c, 0), { px: Number(arg(c, 1)) }, client);
      store.incr(key(c, 1), client);
      return c.read(store.get(key(c, 1)));
    },
  ],
  [
    'extend',
    (c) => {
      const { store, client } = c;
      if (c.read(store.get(key(c, 0))) !== arg(c, 0)) return 0;
      store.expire(key(c, 0), Number(arg(c, 1)), client);
      c.read(store.pttl(key(c, 0)));
      return 1;
    },
  ],
  [
    'release',
    (c) => {
      const { store, client } = c;
      if (c.read(store.get(key(c, 0))) !== arg(c, 0)) return 0;
      store.del(key(c, 0), client);
      return 1;
    },
  ],
]);

/** Registers the in-memory twin of a Lua script, by the script's name. */
export function defineMemoryScript(name: string, script: MemoryScript): void {
  registry.set(name, script);
}

/** @internal */
export function memoryScript(name: string): MemoryScript | undefined {
  return registry.get(name);
}
