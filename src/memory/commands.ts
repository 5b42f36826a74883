import type { MemoryBackend, MemoryClient } from './backend.ts';
import { type CommandSpec, integer, SYNTAX, upper } from './command-kit.ts';
import { streamCommands } from './commands-stream.ts';
import { zsetCommands } from './commands-zset.ts';

const hash = (store: MemoryBackend, key: string) => store.typed(key, 'hash');

function flush(store: MemoryBackend): string {
  store.flush();
  return 'OK';
}

/** Keys, strings, counters, TIME and hashes. */
const basicCommands: Record<string, CommandSpec> = {
  GET: { arity: 1, read: true, run: (store, [key = '']) => store.get(key) },
  SET: {
    arity: 2,
    status: true,
    run(store, [key = '', value = '', ...flags], by) {
      const words = upper(flags, 0);
      let px: number | undefined;
      let at: number | undefined;
      for (let i = 0; i < words.length; i++) {
        const word = words[i];
        if (word === 'PX' || word === 'EX' || word === 'PXAT' || word === 'EXAT') {
          if (px !== undefined || at !== undefined) throw new Error(SYNTAX);
          const n = integer(flags[++i]);
          if (n <= 0) throw new Error("ERR invalid expire time in 'set' command");
          const ms = word === 'PX' || word === 'PXAT' ? n : n * 1000;
          if (word === 'PX' || word === 'EX') px = ms;
          else at = store.at(ms);
        } else if (word !== 'NX' && word !== 'XX') throw new Error(SYNTAX);
      }
      if (words.includes('NX') && words.includes('XX')) throw new Error(SYNTAX);
      if (words.includes('XX') && store.type(key) === 'none') return null;
      const options = {
        nx: words.includes('NX'),
        ...(px === undefined ? {} : { px }),
        ...(at === undefined ? {} : { at }),
      };
      return store.set(key, value, options, by) ? 'OK' : null;
    },
  },
  DEL: {
    arity: 1,
    run: (store, keys, by) => keys.filter((key) => store.del(key, by)).length,
  },
  EXISTS: {
    arity: 1,
    read: true,
    run: (store, keys) => keys.filter((key) => store.type(key) !== 'none').length,
  },
  // Reaches the clients that subscribed through the store (MemoryBackend.subscribe). The default
  // driver subscribes nobody, so there a direct grant (scripts/includes/grant.lua) reaches no one
  // and the release frees the lock: waiters are woken by pushes.
  PUBLISH: { arity: 2, run: (store, [channel = '', text = '']) => store.publish(channel, text) },
  TYPE: { arity: 1, read: true, status: true, run: (store, [key = '']) => store.type(key) },
  PTTL: { arity: 1, read: true, run: (store, [key = '']) => store.pttl(key) },
  PEXPIRE: {
    arity: 2,
    run: (store, [key = '', ttl], by) => (store.expire(key, integer(ttl), by) ? 1 : 0),
  },
  PEXPIREAT: {
    arity: 2,
    run: (store, [key = '', at], by) => (store.expireAt(key, store.at(integer(at)), by) ? 1 : 0),
  },
  PERSIST: { arity: 1, run: (store, [key = ''], by) => (store.expire(key, undefined, by) ? 1 : 0) },
  INCR: { arity: 1, run: (store, [key = ''], by) => Number(store.incr(key, by)) },
  TIME: {
    arity: 0,
    run(store) {
      const micros = store.micros();
      return [String(Math.floor(micros / 1e6)), String(micros % 1e6)];
    },
  },
  FLUSHALL: { arity: 0, status: true, run: flush },
  FLUSHDB: { arity: 0, status: true, run: flush },
  HSET: {
    arity: 3,
    run(store, [key = '', ...pairs], by) {
      if (pairs.length % 2 !== 0) throw new Error("ERR wrong number of arguments for 'hset' command");
      const map = store.open(key, 'hash', () => new Map());
      let added = 0;
      for (let i = 0; i < pairs.length; i += 2) {
        if (!map.has(pairs[i]!)) added += 1;
        map.set(pairs[i]!, pairs[i + 1]!);
      }
      // Redis signals every HSET as a change, also one that rewrites the same values.
      store.wrote(key, true, by);
      return added;
    },
  },
  HDEL: {
    arity: 2,
    run(store, [key = '', ...fields], by) {
      const map = hash(store, key);
      if (map === undefined) return 0;
      const removed = fields.filter((field) => map.delete(field)).length;
      store.wrote(key, removed > 0, by);
      return removed;
    },
  },
  HGET: {
    arity: 2,
    read: true,
    run: (store, [key = '', field = '']) => hash(store, key)?.get(field) ?? null,
  },
  HMGET: {
    arity: 2,
    read: true,
    run: (store, [key = '', ...fields]) => {
      const map = hash(store, key);
      return fields.map((field) => map?.get(field) ?? null);
    },
  },
  HGETALL: { arity: 1, read: true, run: (store, [key = '']) => [...(hash(store, key) ?? [])].flat() },
  // One call walks the whole keyspace (cursor 0 in, 0 out), as SCAN may: the store is local.
  SCAN: {
    arity: 1,
    run(store, [, ...rest]) {
      const words = upper(rest, 0);
      const at = words.indexOf('MATCH');
      const match = at === -1 ? undefined : globToRegExp(rest[at + 1] ?? '*');
      return ['0', store.keys().filter((key) => match === undefined || match.test(key))];
    },
  },
  HLEN: { arity: 1, read: true, run: (store, [key = '']) => hash(store, key)?.size ?? 0 },
};

/** Redis's glob (`*`, `?`, `[...]`, `\\x`) as a RegExp. */
function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '\\') source += literal(glob[++i] ?? '\\');
    else if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end === -1) source += '\\[';
      else {
        source += `[${glob
          .slice(i + 1, end)
          .replace(/^\^/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else source += literal(c);
  }
  return new RegExp(`^${source}$`);
}

const literal = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const commands: Record<string, CommandSpec> = { ...basicCommands, ...zsetCommands, ...streamCommands };

/**
 * Runs one command against `store` for client `by` and returns its reply as a RESP2 client
 * decodes it (integers as numbers, bulk and status strings as strings, nil as null, arrays), or
 * throws Redis's error. A read-only command arms tracking of the keys it read for `by`, also when
 * it fails.
 * `statuses`: a status reply comes back as `{ ok }` (what a script sees) instead of a string.
 */
export function runCommand(
  store: MemoryBackend,
  args: readonly string[],
  by: MemoryClient | undefined,
  statuses = false,
): unknown {
  const [name = '', ...rest] = args;
  const upperName = name.toUpperCase();
  const spec = Object.hasOwn(commands, upperName) ? commands[upperName] : undefined;
  if (spec === undefined) {
    throw new Error(`ERR the memory backend does not support the command '${name}'`);
  }
  if (rest.length < spec.arity) {
    throw new Error(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
  }
  try {
    const reply = spec.run(store, rest, by);
    return statuses && spec.status && typeof reply === 'string' ? { ok: reply } : reply;
  } finally {
    // Redis arms the keys of a read that failed too (GET of a hash: WRONGTYPE, yet tracked).
    if (spec.read) for (const key of upperName === 'EXISTS' ? rest : rest.slice(0, 1)) store.track(key, by);
  }
}
