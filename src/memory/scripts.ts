import { arg, key, type MemoryScript } from './script-call.ts';
import { electionScripts } from './scripts-election.ts';
import { fairScripts } from './scripts-fair.ts';
import { rwlockScripts } from './scripts-rwlock.ts';
import { semaphoreScripts } from './scripts-semaphore.ts';

export type { MemoryScript, MemoryScriptCall } from './script-call.ts';

/**
 * Scripts the memory backend runs by name, one per Lua script in src/scripts/. The mutex's are
 * here; each other primitive's are in scripts-<primitive>.ts. `defineMemoryScript` adds or
 * replaces one; a script without a twin fails with an `ERR` reply.
 */
const registry = new Map<string, MemoryScript>([
  [
    'acquire',
    (c) => {
      const { store, client } = c;
      if (store.set(key(c, 0), arg(c, 0), { nx: true, px: Number(arg(c, 1)) }, client)) {
        const fence = String(store.incr(key(c, 1), client));
        c.read(store.pttl(key(c, 0)));
        return [1, fence];
      }
      return [0, c.read(store.pttl(key(c, 0)))];
    },
  ],
  [
    'force',
    (c) => {
      const { store, client } = c;
      store.set(key(c, 0), arg(c, 0), { px: Number(arg(c, 1)) }, client);
      const fence = String(store.incr(key(c, 1), client));
      c.read(store.pttl(key(c, 0)));
      return fence;
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
  [
    'fence-raise',
    (c) => {
      const [lock, fence] = [key(c, 0), key(c, 1)];
      const current = Number(c.call('GET', fence) ?? '0');
      if (current < Number(arg(c, 1))) c.call('SET', fence, arg(c, 1));
      return c.call('GET', lock) === arg(c, 0) ? 1 : 0;
    },
  ],
  ...semaphoreScripts,
  ...rwlockScripts,
  ...fairScripts,
  ...electionScripts,
]);

/** Registers the in-memory twin of a Lua script, by the script's name. */
export function defineMemoryScript(name: string, script: MemoryScript): void {
  registry.set(name, script);
}

/** @internal */
export function memoryScript(name: string): MemoryScript | undefined {
  return registry.get(name);
}
