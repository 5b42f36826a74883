import { monotonic } from '../base/clock.ts';
import { after } from '../base/timer.ts';
import type { Driver } from '../driver/types.ts';
import { monotonicAt, serverMicros } from './clock.ts';
import type { Stream } from './stream.ts';
import { SortedSet } from './zset.ts';

/** The Redis data types the backend keeps, by TYPE name. */
export interface MemoryTypes {
  string: string;
  hash: Map<string, string>;
  zset: SortedSet;
  stream: Stream;
}

type Value = MemoryTypes[keyof MemoryTypes];

const typeOf = (value: Value): keyof MemoryTypes =>
  typeof value === 'string'
    ? 'string'
    : value instanceof Map
      ? 'hash'
      : value instanceof SortedSet
        ? 'zset'
        : 'stream';

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

/** One key as the store holds it. */
export interface Entry {
  value: Value;
  /** On the store's clock (monotonic ms by default); undefined: no TTL. */
  expiresAt: number | undefined;
}

/**
 * The clocks a store runs on. By default the process's: TTLs on the monotonic clock,
 * TIME from the wall clock at start plus the monotonic clock since. A store standing in for a
 * script run against rows of another server (src/postgres/) runs on that server's clock instead,
 * frozen at the moment the rows were read, and sets no timers.
 */
export interface StoreClock {
  /** Now on the clock TTLs run on (ms). */
  now(): number;
  /** An epoch-ms time (PXAT, PEXPIREAT) on that clock. */
  at(epochMs: number): number;
  /** What TIME returns, in microseconds since the epoch. */
  micros(): number;
}

const PROCESS_CLOCK: StoreClock = { now: monotonic, at: monotonicAt, micros: serverMicros };

/** What a store may be built with besides its defaults. */
export interface StoreOptions {
  /** A clock of its own (no expiry timers are set on one). */
  clock?: StoreClock;
  /** Called with every key a command changed, deleted or found expired. */
  changed?: (key: string) => void;
  /**
   * Expiry timers on a clock of its own too (by default a store with its own clock sets none): a
   * simulation whose virtual clock drives timers as well (test/sim/).
   */
  timers?: boolean;
}

/** One "connection" to a MemoryBackend: what tracking emulation needs to know of it. */
export interface MemoryClient {
  readonly tracking: boolean;
  /** Delivers an invalidation push (`null`: everything may have changed). */
  push(keys: string[] | null): void;
  /** Delivers a message published on a channel it subscribed to (pub/sub). */
  message?(channel: string, text: string): void;
}

/**
 * An in-process stand-in for one Redis server: strings, hashes, sorted sets and streams with
 * millisecond TTLs on whole keys, the commands leasehold's scripts use, and client-tracking
 * emulation. Share one backend between several Leasehold instances in a process
 * (for example in a unit test) and they coordinate exactly as if they shared a Redis, with
 * notifications, fencing tokens and TTLs, but without a server and in microseconds.
 *
 * Scripts are the same Lua files Redis runs, in a Lua VM (see lua.ts). Tracking follows the
 * default mode of Redis >= 7.2 with NOLOOP: a client is told (once) about a key it has read, by a
 * read-only command or inside a script, when another client writes or deletes it or when it
 * expires. Unlike Redis, expiry is reported on time (a timer per backend), not seconds late.
 *
 * @example
 * import { Leasehold, MemoryBackend } from 'leasehold';
 * const backend = new MemoryBackend();
 * const a = await Leasehold.connect({ backend });
 * const b = await Leasehold.connect({ backend });
 * const lease = await a.acquire('job');
 * await b.tryAcquire('job'); // undefined: a holds it
 */
export class MemoryBackend {
  /** The backend `Leasehold.connect({ backend: 'memory' })` uses: one per process. */
  static readonly shared = new MemoryBackend();

  readonly #data = new Map<string, Entry>();
  /** key -> clients that read it since its last change (one-shot, like Redis's tracking table). */
  readonly #trackers = new Map<string, Set<MemoryClient>>();
  readonly #clients = new Set<MemoryClient>();
  /** channel -> clients subscribed to it. */
  readonly #channels = new Map<string, Set<MemoryClient>>();
  #cancelTimer: (() => void) | undefined;
  /** The time of the script running now (see atomically). */
  #frozenAt: number | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  readonly #clock: StoreClock;
  readonly #timers: boolean;
  readonly #onChange: ((key: string) => void) | undefined;

  constructor(options: StoreOptions = {}) {
    this.#clock = options.clock ?? PROCESS_CLOCK;
    this.#timers = options.clock === undefined || options.timers === true;
    this.#onChange = options.changed;
  }

  /** @internal TIME, in microseconds since the epoch, on the store's clock. */
  micros(): number {
    return this.#clock.micros();
  }

  /** @internal An epoch-ms time (PXAT, PEXPIREAT) on the store's clock. */
  at(epochMs: number): number {
    return this.#clock.at(epochMs);
  }

  /** @internal The key as stored, expired or not; undefined when missing. */
  entry(key: string): Readonly<Entry> | undefined {
    return this.#data.get(key);
  }

  /** @internal Puts a key in place as it was read from elsewhere: no client is told. */
  load(key: string, entry: Entry): void {
    this.#data.set(key, entry);
  }

  /** Number of live keys (expired ones are dropped first). */
  get size(): number {
    this.#expire();
    return this.#data.size;
  }

  /** The live keys (for SCAN). */
  keys(): string[] {
    this.#expire();
    return [...this.#data.keys()];
  }

  /** Deletes every key and tells every tracking client that everything may have changed. */
  flush(): void {
    this.#data.clear();
    this.#trackers.clear();
    for (const client of this.#clients) if (client.tracking) client.push(null);
  }

  /** @internal */
  attach(client: MemoryClient): void {
    this.#clients.add(client);
  }

  /** @internal */
  detach(client: MemoryClient): void {
    this.#clients.delete(client);
    for (const [key, set] of this.#trackers) {
      set.delete(client);
      if (set.size === 0) this.#trackers.delete(key);
    }
    for (const channel of [...this.#channels.keys()]) this.unsubscribe(client, channel);
  }

  /**
   * @internal The driver a Leasehold instance talks to this store through; undefined: the
   * default in-process one (MemoryDriver). A subclass may hand out its own (test/sim/ puts a
   * simulated network between instances and the store).
   */
  driver(_tracking: boolean): Driver | undefined {
    return undefined;
  }

  /** @internal SUBSCRIBE: `client` hears every message published on `channel`. */
  subscribe(client: MemoryClient, channel: string): void {
    let set = this.#channels.get(channel);
    if (set === undefined) {
      set = new Set();
      this.#channels.set(channel, set);
    }
    set.add(client);
  }

  /** @internal UNSUBSCRIBE. */
  unsubscribe(client: MemoryClient, channel: string): void {
    const set = this.#channels.get(channel);
    if (set === undefined) return;
    set.delete(client);
    if (set.size === 0) this.#channels.delete(channel);
  }

  /** @internal PUBLISH: delivers `text` to every subscriber of `channel`; returns how many. */
  publish(channel: string, text: string): number {
    const set = this.#channels.get(channel);
    if (set === undefined) return 0;
    for (const client of set) client.message?.(channel, text);
    return set.size;
  }

  /** @internal GET */
  get(key: string): string | null {
    return this.typed(key, 'string') ?? null;
  }

  /** @internal The live value of `key` if it is of `type`; undefined when missing; WRONGTYPE otherwise. */
  typed<T extends keyof MemoryTypes>(key: string, type: T): MemoryTypes[T] | undefined {
    const entry = this.#live(key);
    if (entry === undefined) return undefined;
    if (typeOf(entry.value) !== type) throw new Error(WRONGTYPE);
    return entry.value as MemoryTypes[T];
  }

  /** @internal TYPE: 'none' when missing. */
  type(key: string): keyof MemoryTypes | 'none' {
    const entry = this.#live(key);
    return entry === undefined ? 'none' : typeOf(entry.value);
  }

  /**
   * @internal The value of `key`, created empty (without a TTL) when missing, for a command to
   * change in place. The command must call `wrote()` afterwards, also when it changed nothing.
   */
  open<T extends 'hash' | 'zset' | 'stream'>(
    key: string,
    type: T,
    create: () => MemoryTypes[T],
  ): MemoryTypes[T] {
    const existing = this.typed(key, type);
    if (existing !== undefined) return existing;
    const value = create();
    this.#data.set(key, { value, expiresAt: undefined });
    return value;
  }

  /**
   * @internal After a command changed the value of `key` in place: a hash or sorted set left
   * empty is deleted, as Redis does, and when `changed` the clients tracking the key are told.
   */
  wrote(key: string, changed: boolean, by?: MemoryClient): void {
    const value = this.#data.get(key)?.value;
    if ((value instanceof Map || value instanceof SortedSet) && value.size === 0) this.#data.delete(key);
    if (changed) this.#changed(key, by);
  }

  /** @internal Remaining TTL in ms: -2 missing, -1 no TTL (Redis's PTTL). */
  pttl(key: string): number {
    const entry = this.#live(key);
    if (entry === undefined) return -2;
    if (entry.expiresAt === undefined) return -1;
    return Math.max(0, Math.ceil(entry.expiresAt - this.#now()));
  }

  /** @internal Arms tracking of `key` for `client`, after a read-only command read it. */
  track(key: string, client: MemoryClient | undefined): void {
    if (client === undefined || !client.tracking) return;
    let set = this.#trackers.get(key);
    if (set === undefined) {
      set = new Set();
      this.#trackers.set(key, set);
    }
    set.add(client);
  }

  /**
   * @internal SET with optional NX and an expiry: PX (ms from now) or `at` (monotonic ms, from
   * PXAT / EXAT: see monotonicAt). Returns false when NX found the key. An expiry already past
   * leaves the key expired, as Redis deletes it.
   */
  set(
    key: string,
    value: string,
    options: { px?: number; at?: number; nx?: boolean } = {},
    by?: MemoryClient,
  ): boolean {
    if (options.nx === true && this.#live(key) !== undefined) return false;
    const expiresAt = options.px === undefined ? options.at : this.#now() + options.px;
    this.#data.set(key, { value, expiresAt });
    if (expiresAt !== undefined) this.#arm(expiresAt);
    this.#changed(key, by);
    return true;
  }

  /** @internal */
  del(key: string, by?: MemoryClient): boolean {
    if (this.#live(key) === undefined) return false;
    this.#data.delete(key);
    this.#changed(key, by);
    return true;
  }

  /** @internal PEXPIRE (ttl; <= 0 deletes the key) or PERSIST (undefined). False when the key is missing. */
  expire(key: string, ttl: number | undefined, by?: MemoryClient): boolean {
    return this.expireAt(key, ttl === undefined ? undefined : this.#now() + ttl, by);
  }

  /**
   * @internal PEXPIREAT with `at` in monotonic ms (see monotonicAt; a time already past deletes
   * the key), or PERSIST (undefined). False when the key is missing.
   */
  expireAt(key: string, at: number | undefined, by?: MemoryClient): boolean {
    const entry = this.#live(key);
    if (entry === undefined) return false;
    if (at !== undefined && at <= this.#now()) return this.del(key, by);
    if (at === undefined && entry.expiresAt === undefined) return false;
    entry.expiresAt = at;
    if (at !== undefined) this.#arm(at);
    this.#changed(key, by);
    return true;
  }

  /** @internal INCR: the new value as a string (exact beyond 2^53, like Redis's reply via GET). */
  incr(key: string, by?: MemoryClient): string {
    const value = this.typed(key, 'string');
    if (value !== undefined && !/^-?\d{1,19}$/.test(value)) {
      throw new Error('ERR value is not an integer or out of range');
    }
    const next = (value === undefined ? 0n : BigInt(value)) + 1n;
    this.#data.set(key, { value: String(next), expiresAt: this.#data.get(key)?.expiresAt });
    this.#changed(key, by);
    return String(next);
  }

  /**
   * Runs `body` as one script or command: like Redis, which checks expiry against the time the
   * script started, every key read inside sees one clock. Without it a key could exist for
   * EXISTS and be gone for the PTTL that follows, a reply Redis never gives.
   * @internal
   */
  atomically<T>(body: () => T): T {
    if (this.#frozenAt !== undefined) return body();
    this.#frozenAt = this.#clock.now();
    try {
      return body();
    } finally {
      this.#frozenAt = undefined;
    }
  }

  #now(): number {
    return this.#frozenAt ?? this.#clock.now();
  }

  /** The entry unless its TTL ran out (then it is expired now, and its trackers told). */
  #live(key: string): Entry | undefined {
    const entry = this.#data.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.#now()) {
      this.#data.delete(key);
      this.#changed(key, undefined);
      return undefined;
    }
    return entry;
  }

  /** A write: tell every client tracking the key except the writer (NOLOOP), then forget them all. */
  #changed(key: string, by: MemoryClient | undefined): void {
    this.#onChange?.(key);
    const set = this.#trackers.get(key);
    if (set === undefined) return;
    this.#trackers.delete(key);
    for (const client of set) if (client !== by) client.push([key]);
  }

  #arm(at: number): void {
    if (!this.#timers || at >= this.#timerAt) return;
    this.#cancelTimer?.();
    this.#timerAt = at;
    // A PEXPIRE can reach beyond setTimeout's 2^31-1 ms (a fair lock's queue lives 2 ttl).
    this.#cancelTimer = after(Math.ceil(at - this.#clock.now()), () => this.#expire());
  }

  /** Expires every key whose TTL ran out and re-arms the timer for the next one. */
  #expire(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [key, entry] of this.#data) {
      if (entry.expiresAt === undefined) continue;
      if (entry.expiresAt <= now) this.#live(key);
      else next = Math.min(next, entry.expiresAt);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }
}
