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
// - strings cross the boundary as UTF-8 text: binary values that are not UTF-8 do not survive.
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

/**
 * The Lua C API as the wasm module exports it. wasmoon's own wrappers (`lua.lua_gettop(...)`)
 * convert every argument through emscripten's `ccall`, dear on every call:
 * the hot path calls these exports directly and moves strings through a scratch buffer.
 */
interface Wasm {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  _lua_absindex(L: State, index: number): number;
  _lua_createtable(L: State, arrays: number, fields: number): void;
  _lua_getfield(L: State, index: number, name: number): number;
  _lua_gettop(L: State): number;
  _lua_isinteger(L: State, index: number): number;
  _lua_pcallk(L: State, args: number, results: number, handler: number, ctx: number, k: number): number;
  _lua_pushboolean(L: State, value: number): void;
  _lua_pushinteger(L: State, value: bigint): void;
  _lua_pushlstring(L: State, text: number, length: number): number;
  _lua_rawgeti(L: State, index: number, n: bigint): number;
  _lua_rawseti(L: State, index: number, n: bigint): void;
  _lua_setfield(L: State, index: number, name: number): void;
  _lua_setglobal(L: State, name: number): void;
  _lua_settop(L: State, index: number): void;
  _lua_toboolean(L: State, index: number): number;
  _lua_tointegerx(L: State, index: number, ok: number): bigint;
  _lua_tolstring(L: State, index: number, length: number): number;
  _lua_tonumberx(L: State, index: number, ok: number): number;
  _lua_type(L: State, index: number): number;
}

const REGISTRY = -1_001_000; // LUA_REGISTRYINDEX for wasmoon's LUAI_MAXSTACK (1,000,000)
const T = { nil: 0, boolean: 1, number: 3, string: 4, table: 5 } as const;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

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
  readonly #wasm: Wasm;
  readonly #L: State;
  /** Script source -> registry reference of its compiled chunk. */
  readonly #compiled = new Map<string, number>();
  /** C strings of the names the hot path uses. */
  readonly #names: Record<'KEYS' | 'ARGV' | 'ok' | 'err' | 'where', number>;
  /** A size_t that lua_tolstring writes a string's length to. */
  readonly #length: number;
  /** Where strings are encoded on their way into Lua. */
  #scratch: number;
  #scratchSize = 1024;
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
    const wasm = lua.module as unknown as Wasm;
    this.#wasm = wasm;
    const L = lua.luaL_newstate();
    this.#L = L;
    const name = (text: string) => lua.module.stringToNewUTF8(text);
    this.#names = {
      KEYS: name('KEYS'),
      ARGV: name('ARGV'),
      ok: name('ok'),
      err: name('err'),
      where: name('where'),
    };
    this.#length = wasm._malloc(8);
    this.#scratch = wasm._malloc(this.#scratchSize);
    lua.luaL_openlibs(L);
    this.#check(lua.luaL_loadstring(L, PRELUDE), 'the memory backend could not set up Lua');
    for (const raise of [true, false]) {
      const bridge = lua.module.addFunction((from: State) => this.#bridge(from, raise), 'ii');
      lua.lua_pushcclosure(L, bridge, 0);
    }
    this.#check(lua.lua_pcallk(L, 2, 0, 0, 0, null), 'the memory backend could not set up Lua');
  }

  /**
   * Runs `source` with KEYS and ARGV, its commands going to `host`, and returns its reply as a
   * RESP2 client decodes it; an error reply is thrown, worded as Redis words it.
   */
  run(source: string, keys: readonly string[], args: readonly string[], host: CommandHost): unknown {
    const wasm = this.#wasm;
    const L = this.#L;
    this.#setArray(this.#names.KEYS, keys);
    this.#setArray(this.#names.ARGV, args);
    wasm._lua_rawgeti(L, REGISTRY, BigInt(this.#chunk(source)));
    this.#host = host;
    try {
      if (wasm._lua_pcallk(L, 0, 1, 0, 0, 0) !== 0) throw this.#scriptError(source);
      const reply = this.#reply(L, -1);
      if (reply instanceof Error) throw reply;
      return reply;
    } finally {
      this.#host = undefined;
      wasm._lua_settop(L, 0);
    }
  }

  #chunk(source: string): number {
    let ref = this.#compiled.get(source);
    if (ref === undefined) {
      const lua = this.#lua;
      // A shebang (`#!lua flags=no-writes`) is Redis's line, not Lua's: a comment here, so that
      // line numbers in error messages stay the server's.
      const body = source.startsWith('#!') ? `--${source.slice(2)}` : source;
      if (lua.luaL_loadbufferx(this.#L, body, Buffer.byteLength(body), '@user_script', 't') !== 0) {
        const message = this.#string(this.#L, -1);
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
    const wasm = this.#wasm;
    let failure: string;
    try {
      const n = wasm._lua_gettop(L);
      const args: string[] = [];
      for (let i = 1; i <= n; i++) {
        const type = wasm._lua_type(L, i);
        if (type === T.string) args.push(this.#string(L, i));
        else if (type === T.number) args.push(this.#numberArg(L, i));
        else throw new Error('ERR Lua redis lib command arguments must be strings or integers');
      }
      if (n === 0) throw new Error('ERR Please specify at least one argument for this redis lib call');
      const reply = this.#host!(args);
      wasm._lua_settop(L, 0);
      this.#push(L, reply);
      return 1;
    } catch (error) {
      if (error === Number.POSITIVE_INFINITY) throw error; // emscripten's longjmp: not ours
      failure = error instanceof Error ? error.message : String(error);
    }
    // As Redis 7: the error is a table, with where it happened for the final message.
    wasm._lua_settop(L, 0);
    wasm._lua_createtable(L, 0, 2);
    this.#pushString(L, failure);
    wasm._lua_setfield(L, -2, this.#names.err);
    this.#lua.luaL_where(L, 1);
    wasm._lua_setfield(L, -2, this.#names.where);
    return raise ? this.#lua.lua_error(L) : 1;
  }

  /** Pushes a command's reply as Redis converts it for Lua (nil as false, status as {ok=}). */
  #push(L: State, reply: unknown): void {
    const wasm = this.#wasm;
    if (typeof reply === 'number') wasm._lua_pushinteger(L, BigInt(reply));
    else if (typeof reply === 'string') this.#pushString(L, reply);
    else if (Array.isArray(reply)) {
      wasm._lua_createtable(L, reply.length, 0);
      for (let i = 0; i < reply.length; i++) {
        this.#push(L, reply[i]);
        wasm._lua_rawseti(L, -2, BigInt(i + 1));
      }
    } else if (reply !== null && typeof reply === 'object' && 'ok' in reply) {
      wasm._lua_createtable(L, 0, 1);
      this.#pushString(L, String(reply.ok));
      wasm._lua_setfield(L, -2, this.#names.ok);
    } else wasm._lua_pushboolean(L, 0);
  }

  /** The value at `index` as Redis converts a script's reply, decoded as a RESP2 client would. */
  #reply(L: State, index: number): unknown {
    const wasm = this.#wasm;
    switch (wasm._lua_type(L, index)) {
      case T.number:
        return wasm._lua_isinteger(L, index)
          ? Number(wasm._lua_tointegerx(L, index, 0))
          : Math.trunc(wasm._lua_tonumberx(L, index, 0));
      case T.string:
        return this.#string(L, index);
      case T.boolean:
        return wasm._lua_toboolean(L, index) ? 1 : null;
      case T.table:
        return this.#table(L, wasm._lua_absindex(L, index));
      default:
        return null;
    }
  }

  #table(L: State, index: number): unknown {
    const wasm = this.#wasm;
    const err = this.#field(L, index, this.#names.err);
    if (err !== undefined) return new Error(err);
    const ok = this.#field(L, index, this.#names.ok);
    if (ok !== undefined) return ok;
    const out: unknown[] = [];
    // Like Redis: the array ends at the first nil.
    for (let i = 1; wasm._lua_rawgeti(L, index, BigInt(i)) !== T.nil; i++) {
      out.push(this.#reply(L, -1));
      wasm._lua_settop(L, -2);
    }
    wasm._lua_settop(L, -2);
    return out;
  }

  /** A string field of the table at `index`, or undefined. */
  #field(L: State, index: number, name: number): string | undefined {
    const type = this.#wasm._lua_getfield(L, index, name);
    const value = type === T.string ? this.#string(L, -1) : undefined;
    this.#wasm._lua_settop(L, -2);
    return value;
  }

  /** The error a failed script replies with, worded as Redis 7 and 8 word it. */
  #scriptError(source: string): Error {
    const L = this.#L;
    const sha = createHash('sha1').update(source).digest('hex');
    let message: string;
    let where: string;
    if (this.#wasm._lua_type(L, -1) === T.table) {
      message = this.#field(L, -1, this.#names.err) ?? 'ERR unknown error';
      where = this.#field(L, -1, this.#names.where) ?? '';
    } else {
      const text = this.#string(L, -1);
      message = `ERR ${text}`;
      where = /^(user_script:\d+):/.exec(text)?.[1] ?? '';
    }
    where = where.replace(/:\s*$/, '');
    return new Error(`${message} script: ${sha}${where === '' ? '' : `, on @${where}`}.`);
  }

  #setArray(name: number, values: readonly string[]): void {
    const wasm = this.#wasm;
    const L = this.#L;
    wasm._lua_createtable(L, values.length, 0);
    for (let i = 0; i < values.length; i++) {
      this.#pushString(L, values[i]!);
      wasm._lua_rawseti(L, -2, BigInt(i + 1));
    }
    wasm._lua_setglobal(L, name);
  }

  /** The string (or number, converted in place as lua_tolstring does) at `index`. */
  #string(L: State, index: number): string {
    const wasm = this.#wasm;
    const pointer = wasm._lua_tolstring(L, index, this.#length);
    if (pointer === 0) return '';
    const length = wasm.HEAPU32[this.#length >> 2]!;
    return decoder.decode(wasm.HEAPU8.subarray(pointer, pointer + length));
  }

  #pushString(L: State, text: string): void {
    const wasm = this.#wasm;
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (text.length * 3 > this.#scratchSize) {
      wasm._free(this.#scratch);
      this.#scratchSize = text.length * 3;
      this.#scratch = wasm._malloc(this.#scratchSize);
    }
    const { written } = encoder.encodeInto(
      text,
      wasm.HEAPU8.subarray(this.#scratch, this.#scratch + this.#scratchSize),
    );
    wasm._lua_pushlstring(L, this.#scratch, written);
  }

  /** A number argument of redis.call as Redis sends it: the double's shortest decimal form. */
  #numberArg(L: State, index: number): string {
    const wasm = this.#wasm;
    return wasm._lua_isinteger(L, index)
      ? String(Number(wasm._lua_tointegerx(L, index, 0)))
      : String(wasm._lua_tonumberx(L, index, 0));
  }

  #check(status: number, what: string): void {
    if (status === 0) return;
    throw new Error(`${what}: ${this.#string(this.#L, -1)}`);
  }
}
