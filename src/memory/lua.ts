// The memory backend runs the very .lua files Redis runs (src/scripts/), in a real Lua VM, so that
// the two cannot drift apart. The VM is wasmoon (Lua 5.4 compiled to WebAssembly), chosen over
// fengari (Lua 5.3 in plain JS, what ioredis-mock uses) because fengari's integers are 32 bits:
// `tonumber(t[1]) * 1000`, the scripts' server time in ms, wraps around there. Lua 5.4's 64-bit
// integers compute what Redis's Lua 5.1 doubles compute for every integer below 2^53, and its
// floats are doubles. What stays different from 5.1, and is bridged or left:
// - numbers passed to redis.call are sent as Redis sends a double (5.0 as "5"), and a number in
//   a reply is truncated to an integer, as Redis does; inside a script, though, `tostring(5.0)`
//   and `'x' .. 5.0` give "5.0" where 5.1 gives "5" (the scripts never format floats that way);
// - 5.4's additions (integer division, bitwise operators, utf8) are not hidden; 5.1's `unpack`
//   is provided; Redis's cjson, cmsgpack, struct and bit libraries are not (no script uses them);
// - strings cross the boundary as UTF-8 text: binary values with NUL bytes do not survive.
// The wasm module is loaded on first use (MemoryDriver.connect), so that importing leasehold costs
// nothing for programs that never use the memory backend.
import { createHash } from 'node:crypto';
import type { LuaWasm } from 'wasmoon';

/** A status reply (`+OK`): a table `{ok = text}` in Lua, the text for a client. */
export interface StatusReply {
  readonly ok: string;
}

/**
 * Runs one command for `redis.call` / `redis.pcall`: its reply as a RESP2 client decodes it
 * (numbers, strings, null, arrays) with status replies as `StatusReply`; throws Redis's error.
 */
export type CommandHost = (args: string[]) => unknown;

type State = number;

const REGISTRY = -1_001_000; // LUA_REGISTRYINDEX for wasmoon's LUAI_MAXSTACK (1,000,000)
const T = { nil: 0, boolean: 1, number: 3, string: 4, table: 5 } as const;

// Redis's script environment, as far as leasehold's scripts (and the error messages users see)
// need it: the libraries Redis loads, read-only globals, and the `redis` table.
const PRELUDE = `
local call, pcall = ...
io, os, package, debug, utf8, require, dofile, loadfile = nil
unpack = table.unpack
KEYS, ARGV = {}, {}
redis = { call = call, pcall = pcall }
function redis.error_reply(text) return { err = text } end
function redis.status_reply(text) return { ok = text } end
setmetatable(_G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
})
`;

let loading: Promise<LuaScripts> | undefined;

/** The process's Lua VM, shared by every MemoryBackend (scripts run one at a time). */
export class LuaScripts {
  readonly #lua: LuaWasm;
  readonly #L: State;
  /** Script source -> registry reference of its compiled chunk. */
  readonly #compiled = new Map<string, number>();
  /** The commands of the script running now. */
  #host: CommandHost | undefined;

  /** Loads the VM on first use. */
  static load(): Promise<LuaScripts> {
    loading ??= import('wasmoon')
      .then(async ({ LuaFactory }) => new LuaScripts(await new LuaFactory().getLuaModule()))
      .catch((error: unknown) => {
        loading = undefined; // a later connect tries again
        throw error;
      });
    return loading;
  }

  private constructor(lua: LuaWasm) {
    this.#lua = lua;
    const L = lua.luaL_newstate();
    this.#L = L;
    lua.luaL_openlibs(L);
    this.#check(lua.luaL_loadstring(L, PRELUDE), 'the memory backend could not set up Lua');
    lua.lua_pushcclosure(
      L,
      lua.module.addFunction((from: State) => this.#bridge(from, true), 'ii'),
      0,
    );
    lua.lua_pushcclosure(
      L,
      lua.module.addFunction((from: State) => this.#bridge(from, false), 'ii'),
      0,
    );
    this.#check(lua.lua_pcallk(L, 2, 0, 0, 0, null), 'the memory backend could not set up Lua');
  }

  /**
   * Runs `source` with KEYS and ARGV, its commands going to `host`, and returns its reply as a
   * RESP2 client decodes it; an error reply is thrown, worded as Redis words it.
   */
  run(source: string, keys: readonly string[], args: readonly string[], host: CommandHost): unknown {
    const lua = this.#lua;
    const L = this.#L;
    this.#setArray('KEYS', keys);
    this.#setArray('ARGV', args);
    lua.lua_rawgeti(L, REGISTRY, BigInt(this.#chunk(source)));
    this.#host = host;
    try {
      if (lua.lua_pcallk(L, 0, 1, 0, 0, null) !== 0) throw this.#scriptError(source);
      const reply = this.#reply(-1);
      if (reply instanceof Error) throw reply;
      return reply;
    } finally {
      this.#host = undefined;
      lua.lua_settop(L, 0);
    }
  }

  #chunk(source: string): number {
    let ref = this.#compiled.get(source);
    if (ref === undefined) {
      const lua = this.#lua;
      if (lua.luaL_loadbufferx(this.#L, source, byteLength(source), '@user_script', 't') !== 0) {
        const message = lua.lua_tolstring(this.#L, -1, null);
        lua.lua_settop(this.#L, 0);
        throw new Error(`ERR Error compiling script (new function): ${message}`);
      }
      ref = lua.luaL_ref(this.#L, REGISTRY);
      this.#compiled.set(source, ref);
    }
    return ref;
  }

  /** `redis.call` (`raise`) and `redis.pcall`: a C function, called with the command's arguments. */
  #bridge(L: State, raise: boolean): number {
    const lua = this.#lua;
    let failure: string;
    try {
      const n = lua.lua_gettop(L);
      const args: string[] = [];
      for (let i = 1; i <= n; i++) {
        const type = lua.lua_type(L, i);
        if (type === T.string) args.push(lua.lua_tolstring(L, i, null));
        else if (type === T.number) args.push(numberArg(lua, L, i));
        else throw new Error('ERR Lua redis lib command arguments must be strings or integers');
      }
      if (n === 0) throw new Error('ERR Please specify at least one argument for this redis lib call');
      const reply = this.#host!(args);
      lua.lua_settop(L, 0);
      this.#push(L, reply);
      return 1;
    } catch (error) {
      if (error === Number.POSITIVE_INFINITY) throw error; // emscripten's longjmp: not ours
      failure = error instanceof Error ? error.message : String(error);
    }
    // As Redis 7: the error is a table, with where it happened for the final message.
    lua.lua_settop(L, 0);
    lua.lua_createtable(L, 0, 3);
    lua.lua_pushstring(L, failure);
    lua.lua_setfield(L, -2, 'err');
    lua.luaL_where(L, 1);
    lua.lua_setfield(L, -2, 'where');
    return raise ? lua.lua_error(L) : 1;
  }

  /** Pushes a command's reply as Redis converts it for Lua (nil as false, status as {ok=}). */
  #push(L: State, reply: unknown): void {
    const lua = this.#lua;
    if (typeof reply === 'number') lua.lua_pushinteger(L, BigInt(reply));
    else if (typeof reply === 'string') lua.lua_pushstring(L, reply);
    else if (Array.isArray(reply)) {
      lua.lua_createtable(L, reply.length, 0);
      for (const [i, item] of reply.entries()) {
        this.#push(L, item);
        lua.lua_rawseti(L, -2, BigInt(i + 1));
      }
    } else if (reply !== null && typeof reply === 'object' && 'ok' in reply) {
      lua.lua_createtable(L, 0, 1);
      lua.lua_pushstring(L, String(reply.ok));
      lua.lua_setfield(L, -2, 'ok');
    } else lua.lua_pushboolean(L, 0);
  }

  /** The value at `index` as Redis converts a script's reply, decoded as a RESP2 client would. */
  #reply(index: number): unknown {
    const lua = this.#lua;
    const L = this.#L;
    switch (lua.lua_type(L, index)) {
      case T.number:
        return lua.lua_isinteger(L, index)
          ? Number(lua.lua_tointegerx(L, index, null))
          : Math.trunc(lua.lua_tonumberx(L, index, null));
      case T.string:
        return lua.lua_tolstring(L, index, null);
      case T.boolean:
        return lua.lua_toboolean(L, index) ? 1 : null;
      case T.table:
        return this.#table(lua.lua_absindex(L, index));
      default:
        return null;
    }
  }

  #table(index: number): unknown {
    const lua = this.#lua;
    const L = this.#L;
    const err = this.#field(index, 'err');
    if (err !== undefined) return new Error(err);
    const ok = this.#field(index, 'ok');
    if (ok !== undefined) return ok;
    const out: unknown[] = [];
    // Like Redis: the array ends at the first nil.
    for (let i = 1; lua.lua_rawgeti(L, index, BigInt(i)) !== T.nil; i++) {
      out.push(this.#reply(-1));
      lua.lua_settop(L, -2);
    }
    lua.lua_settop(L, -2);
    return out;
  }

  /** A string field of the table at `index`, or undefined. */
  #field(index: number, name: string): string | undefined {
    const lua = this.#lua;
    const type = lua.lua_getfield(this.#L, index, name);
    const value = type === T.string ? lua.lua_tolstring(this.#L, -1, null) : undefined;
    lua.lua_settop(this.#L, -2);
    return value;
  }

  /** The error a failed script replies with, worded as Redis 7 and 8 word it. */
  #scriptError(source: string): Error {
    const lua = this.#lua;
    const sha = createHash('sha1').update(source).digest('hex');
    let message: string;
    let where: string;
    if (lua.lua_type(this.#L, -1) === T.table) {
      message = this.#field(-1, 'err') ?? 'ERR unknown error';
      where = this.#field(-1, 'where') ?? '';
    } else {
      const text = lua.lua_tolstring(this.#L, -1, null) ?? 'unknown error';
      message = `ERR ${text}`;
      where = /^(user_script:\d+):/.exec(text)?.[1] ?? '';
    }
    where = where.replace(/:\s*$/, '');
    return new Error(`${message} script: ${sha}${where === '' ? '' : `, on @${where}`}.`);
  }

  #setArray(name: string, values: readonly string[]): void {
    const lua = this.#lua;
    const L = this.#L;
    lua.lua_createtable(L, values.length, 0);
    for (const [i, value] of values.entries()) {
      lua.lua_pushstring(L, value);
      lua.lua_rawseti(L, -2, BigInt(i + 1));
    }
    lua.lua_setglobal(L, name);
  }

  #check(status: number, what: string): void {
    if (status === 0) return;
    const message = this.#lua.lua_tolstring(this.#L, -1, null);
    throw new Error(`${what}: ${message}`);
  }
}

/** A number argument of redis.call as Redis sends it: the double's shortest decimal form. */
function numberArg(lua: LuaWasm, L: State, index: number): string {
  return lua.lua_isinteger(L, index)
    ? String(Number(lua.lua_tointegerx(L, index, null)))
    : String(lua.lua_tonumberx(L, index, null));
}

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');
