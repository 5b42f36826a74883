import { EventEmitter } from 'node:events';
import { type ConnectOptions, checkConnectOptions, type ValidConnectOptions } from './connect-options.ts';
import type { Context } from './context.ts';
import { loadTelemetry, Observer } from './diagnostics.ts';
import type { Driver, TrackingProof } from './driver/types.ts';
import { ConnectionClosedError, NotificationsError } from './errors.ts';
import type { LeaseholdEvents } from './events.ts';
import { type InspectOptions, Inspector, type ListOptions } from './inspect/inspector.ts';
import type { Inspection } from './inspect/types.ts';
import type { Lease } from './lease.ts';
import { Dispatcher } from './notify/dispatcher.ts';
import { type AcquireOptions, checkAcquireOptions, checkName } from './options.ts';
import type { Election } from './primitives/election.ts';
import type { FairLock } from './primitives/fair.ts';
import { Keeper } from './primitives/keeper.ts';
import {
  checkMultiLock,
  type MultiLock,
  MultiLock as MultiLockClass,
  MultiLockCore,
  type MultiLockOptions,
} from './primitives/multi-lock.ts';
import { Mutex } from './primitives/mutex.ts';
import { type MutexBackend, SingleNodeBackend } from './primitives/mutex-backend.ts';
import { OtherPrimitives } from './primitives/others.ts';
import { QuorumBackend } from './primitives/quorum-backend.ts';
import type { ReadWriteLock } from './primitives/rwlock.ts';
import type { Semaphore, SemaphoreOptions } from './primitives/semaphore.ts';
import { Renewer } from './renewer.ts';
import { connectDrivers, createDrivers } from './topology.ts';

/**
 * A connection to Redis and the coordination primitives on top of it.
 *
 * @example
 * const lh = await Leasehold.connect({ url: 'redis://127.0.0.1:6379' });
 * await lh.withLock('cron:purge', async (lease) => purge(lease.signal));
 * await lh.close();
 */
export class Leasehold extends EventEmitter<{ [E in keyof LeaseholdEvents]: [LeaseholdEvents[E]] }> {
  readonly #options: ValidConnectOptions;
  readonly #drivers: readonly Driver[];
  readonly #dispatcher = new Dispatcher();
  readonly #renewer = new Renewer();
  readonly #observer = new Observer(this);
  readonly #keeper: Keeper;
  readonly #keeperCtx: Context;
  readonly #mutex: Mutex;
  readonly #quorum: QuorumBackend | undefined;
  #closing: Promise<void> | undefined;
  /** How this instance learns of changes now; announced once per change after connect(). */
  #mode: 'tracking' | 'polling' = 'polling';
  #connected = false;

  private constructor(options: ValidConnectOptions, drivers: readonly Driver[]) {
    super();
    this.#options = options;
    this.#drivers = drivers;
    const driver = drivers[0]!;
    const self = this;
    const ctx: Context = {
      driver,
      dispatcher: this.#dispatcher,
      renewer: this.#renewer,
      prefix: options.prefix,
      ttl: options.ttl,
      retryDelay: options.retryDelay,
      owner: options.owner,
      get closed() {
        return self.#closing !== undefined;
      },
      emit: (event, payload) => {
        // A throwing user listener must not break the lock machinery that emitted the event.
        try {
          this.#observer.observe(event, payload);
          (this.emit as (e: string, p: unknown) => boolean)(event, payload);
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
      },
    };
    this.#keeperCtx = ctx;
    this.#keeper = new Keeper(ctx);
    this.#quorum = drivers.length > 1 ? new QuorumBackend(drivers) : undefined;
    const backend: MutexBackend = this.#quorum ?? new SingleNodeBackend(ctx);
    this.#mutex = new Mutex(this.#keeper, backend);
    this.#multi = new MultiLockCore(this.#keeper, backend, {
      sharded: options.cluster !== undefined,
      quorum: this.#quorum !== undefined,
    });
    this.#renewer.observer = {
      extended: ({ name, fencingToken, ttl, expiresAt }) =>
        ctx.emit('extended', { name, fencingToken, ttl, expiresAt }),
      extensionFailed: ({ name, fencingToken, expiresAt }, error) =>
        ctx.emit('extension-failed', { name, fencingToken, error, expiresAt }),
    };
    this.#others = new OtherPrimitives(this.#keeper);
    this.#inspector = new Inspector(
      drivers.map((d, i) => ({
        label: options.nodes?.[i] === undefined ? 'redis' : safeUrl(options.nodes[i]),
        driver: d,
      })),
      options.prefix,
    );
    this.#watchConnections(drivers, ctx);
  }

  /**
   * Pushes go to the dispatcher; a reconnect re-checks everything. A dropped connection, with
   * `onDisconnect: 'abort'`, loses the leases behind it at once: in quorum mode only once fewer
   * than a majority of nodes are connected. 'disconnected' and 'reconnected' are emitted once
   * per outage of a connection, not once per failed reconnect attempt (clients report each);
   * a connection that moved to another server (a Sentinel switch) is 'reconnected' too.
   */
  #watchConnections(drivers: readonly Driver[], ctx: Context): void {
    const majority = Math.floor(drivers.length / 2) + 1;
    const down = new Set<Driver>();
    for (const node of drivers) {
      node.setHandlers({
        invalidate: (keys) => this.#dispatcher.invalidate(keys),
        reset: (moved) => {
          const outage = down.delete(node);
          this.#dispatcher.everything();
          this.#keeper.releaseOrphans();
          if (outage || moved === true || !this.#connected) ctx.emit('reconnected', {});
        },
        disconnected: (error, affects) => {
          if (!down.has(node)) {
            down.add(node);
            ctx.emit('disconnected', { error: error ?? new Error('the connection to Redis closed') });
          }
          if (this.#options.onDisconnect !== 'abort' || this.#closing !== undefined) return;
          if (drivers.length > 1 && drivers.length - down.size >= majority) return;
          const detail = `the connection to Redis was lost (${error?.message ?? 'closed'})`;
          this.#keeper.loseWhere(affects ?? (() => true), detail);
        },
        proven: () => {
          if (this.#connected) this.#settleMode();
        },
      });
    }
  }

  /**
   * Pushes are trusted when the canary proved them on the connection (one Redis, Cluster,
   * Sentinel) or on a majority of the nodes (quorum: any majority that takes a lock over shares
   * a proven node with it). A switch wakes every waiter and re-verifies every holder, so that
   * nobody keeps sleeping until a push that will not come (or keeps polling needlessly).
   */
  #settleMode(): void {
    const mode = this.#provenMode();
    if (mode === this.#mode) return;
    this.#mode = mode;
    this.#dispatcher.everything();
    this.#keeperCtx.emit('notifications', {
      mode,
      reason: mode === 'polling' ? this.#failedProof()?.reason : undefined,
    });
  }

  #provenMode(): 'tracking' | 'polling' {
    if (this.#options.notifications === 'polling') return 'polling';
    const proven = this.#drivers.filter((driver) => driver.tracking).length;
    const needed = this.#drivers.length === 1 ? 1 : Math.floor(this.#drivers.length / 2) + 1;
    return proven >= needed ? 'tracking' : 'polling';
  }

  /** The first failed canary verdict among the connections, if any. */
  #failedProof(): TrackingProof | undefined {
    return this.#drivers.map((driver) => driver.proof).find((proof) => proof?.ok === false);
  }

  /**
   * Connects to Redis and arms notifications. Rejects with ConnectError when Redis cannot be
   * reached within `connectTimeout`, and with TypeError for bad options.
   */
  static async connect(options: ConnectOptions = {}): Promise<Leasehold> {
    const valid = checkConnectOptions(options);
    const drivers = createDrivers(valid);
    const lh = new Leasehold(valid, drivers);
    await connectDrivers(drivers, valid);
    await loadTelemetry();
    lh.#start();
    if (valid.notifications === 'tracking' && lh.#mode !== 'tracking') {
      const reason = lh.#failedProof()?.reason;
      await lh.close();
      throw new NotificationsError(
        `notifications: 'tracking' was asked for, but invalidation pushes could not be proven (${reason?.message ?? 'no proof'}); ` +
          "use notifications: 'auto' to poll in that case (docs/compatibility.md)",
        { cause: reason },
      );
    }
    return lh;
  }

  /** After connect: the first verdict on notifications; a fallback is announced (after connect() returns). */
  #start(): void {
    this.#connected = true;
    this.#mode = this.#provenMode();
    if (this.#mode === 'polling' && this.#options.notifications === 'auto') {
      const reason = this.#failedProof()?.reason;
      setImmediate(() => {
        if (this.#mode === 'polling' && this.#closing === undefined) {
          this.#keeperCtx.emit('notifications', { mode: 'polling', reason });
        }
      });
    }
  }

  /**
   * How this instance learns of changes now: 'tracking' (invalidation pushes, proven by a canary
   * on connect and after every reconnect) or 'polling' (every `retryDelay`; holders at their next
   * extension). With `notifications: 'auto'` it falls back to 'polling' when the proof fails.
   */
  get notifications(): 'tracking' | 'polling' {
    return this.#mode;
  }

  /**
   * Leases held, names waited on, keys watched, the notification mode, the driver, and what the
   * last canary proved (the tracking rule the server follows, or why pushes are not trusted).
   */
  get stats(): {
    held: number;
    waiting: number;
    watchedKeys: number;
    renewing: number;
    notifications: 'tracking' | 'polling';
    /**
     * Quorum mode: leases held on a majority but not on every node at their last extension (a
     * node restarted empty, or is down). The next extension puts them back where it can.
     */
    underReplicated: number;
    driver: 'node-redis' | 'ioredis' | 'memory';
    trackingRule: 'declared-keys' | 'read-keys' | undefined;
    notificationsReason: string | undefined;
  } {
    const proof = this.#failedProof() ?? this.#drivers[0]?.proof;
    return {
      ...this.#keeper.stats,
      watchedKeys: this.#dispatcher.size,
      renewing: this.#renewer.size,
      notifications: this.#mode,
      underReplicated: this.#quorum?.partial ?? 0,
      driver: this.#options.memory !== undefined ? 'memory' : this.#options.driver,
      trackingRule: proof?.rule,
      notificationsReason: proof?.reason?.message,
    };
  }

  /**
   * Waits for the lock and returns its Lease. Rejects with LockTimeoutError after `timeout`,
   * with `signal.reason` when `signal` aborts, with ConnectionClosedError on close().
   */
  acquire(name: string, options?: AcquireOptions): Promise<Lease> {
    try {
      checkName(name);
      return this.#mutex.acquire(name, checkAcquireOptions(options, this.#options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease, or undefined when another holder has it. */
  async tryAcquire(
    name: string,
    options?: Pick<AcquireOptions, 'ttl' | 'owner'>,
  ): Promise<Lease | undefined> {
    checkName(name);
    const { ttl, owner } = checkAcquireOptions(options, this.#options);
    return this.#mutex.tryAcquire(name, ttl, owner);
  }

  /** Takes the lock over from whoever holds it; their `signal` aborts at once. */
  async forceAcquire(name: string, options?: Pick<AcquireOptions, 'ttl' | 'owner'>): Promise<Lease> {
    checkName(name);
    const { ttl, owner } = checkAcquireOptions(options, this.#options);
    return this.#mutex.forceAcquire(name, ttl, owner);
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws.
   * Pass `lease.signal` on to the work so that it stops when the lease is lost.
   */
  async withLock<T>(
    name: string,
    fn: (lease: Lease) => Promise<T> | T,
    options?: AcquireOptions,
  ): Promise<T> {
    if (typeof fn !== 'function')
      throw new TypeError('leasehold: withLock needs a function as its second argument');
    const lease = await this.acquire(name, options);
    try {
      return await fn(lease);
    } finally {
      await lease.release().catch(() => {});
    }
  }

  /**
   * Aborts every outstanding lease's signal (reason LockReleasedError), releases the keys,
   * rejects waiters with ConnectionClosedError and disconnects. Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closing = (async () => {
        await this.#keeper.close().catch(() => {});
        this.#renewer.close();
        await Promise.all(this.#drivers.map((driver) => driver.close()));
      })();
    }
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- other primitives ---

  readonly #multi: MultiLockCore;

  /**
   * Several lock names held as one lease: all or none, one fencing token per name, no deadlock
   * between callers asking for overlapping names in any order. Each name is the same lock
   * `acquire(name)` takes. Throws TypeError for an empty, oversized (over 64) or repeating list.
   *
   * @example
   * await using both = await lh.multiLock(['account:1', 'account:2']).acquire({ timeout: 5_000 });
   * both.fencingTokens.get('account:1');
   */
  multiLock(names: readonly string[], options?: MultiLockOptions): MultiLock {
    const valid = checkMultiLock(names, options, { ttl: this.#options.ttl });
    return new MultiLockClass(this.#multi, valid.names, { ttl: valid.ttl });
  }

  readonly #others: OtherPrimitives;

  /**
   * A counting semaphore: at most `limit` permits of `name` held at once, across processes.
   * Throws TypeError in quorum (`nodes`) mode: a majority of independent nodes cannot keep one
   * permit count. The same holds for the read-write lock, fair lock and election.
   *
   * @example
   * const uploads = lh.semaphore('uploads', { limit: 10 });
   * await using permit = await uploads.acquire({ permits: 2, timeout: 5_000 });
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    this.#refuseQuorum('semaphore');
    return this.#others.semaphore(name, options);
  }

  /**
   * A writer-preferring read-write lock: many readers or one writer.
   *
   * @example
   * const config = lh.readWriteLock('config');
   * await using r = await config.read();
   */
  readWriteLock(name: string): ReadWriteLock {
    this.#refuseQuorum('readWriteLock');
    return this.#others.readWriteLock(name);
  }

  /**
   * A fair lock: waiters are served in arrival order, and a release wakes only the next one.
   *
   * @example
   * await using turn = await lh.fairLock('payouts').acquire();
   */
  fairLock(name: string): FairLock {
    this.#refuseQuorum('fairLock');
    return this.#others.fairLock(name);
  }

  /**
   * Leader election: `campaign()` waits to lead, `leader()` tells who leads, `observe()` yields
   * every change.
   *
   * @example
   * const term = await lh.election('scheduler').campaign('node-a');
   */
  election(name: string): Election {
    this.#refuseQuorum('election');
    return this.#others.election(name);
  }

  // --- inspection ---

  readonly #inspector: Inspector;

  /**
   * Who holds `name` and who waits, as Redis has it now: holders with their `owner`, `since`,
   * remaining TTL and fencing token; waiters where the primitive records them (fair lock queue,
   * read-write lock's waiting writers); the election's leader. Undefined when nothing of `name`
   * exists. Read-only, one script call per primitive tried. In quorum mode, `nodes` tells what
   * each node says and `holders` what a majority agrees on.
   *
   * @example
   * const state = await lh.inspect('cron:purge');
   * console.log(state?.holders[0]?.owner, state?.holders[0]?.ttlLeft);
   */
  inspect(name: string, options?: InspectOptions): Promise<Inspection | undefined> {
    try {
      checkName(name);
      if (this.#closing !== undefined) throw new ConnectionClosedError();
      return this.#inspector.inspect(name, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `inspect()` for every name under `prefix` (a lock-name prefix), found with SCAN (never
   * KEYS) on every master or node, at most `limit` entries (default 100), in name order.
   *
   * @example
   * for (const lock of await lh.list({ prefix: 'cron:', primitive: 'mutex' }))
   *   console.log(lock.name, lock.holders.map((h) => h.owner));
   */
  list(options?: ListOptions): Promise<Inspection[]> {
    if (this.#closing !== undefined) return Promise.reject(new ConnectionClosedError());
    try {
      return this.#inspector.list(options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  // A majority of independent nodes cannot keep one permit count (nor, in this version, a reader
  // set, a queue or a leader log): refuse rather than quietly run on the first node alone.
  #refuseQuorum(what: string): void {
    if (this.#drivers.length > 1) {
      throw new TypeError(
        `leasehold: ${what}() is not available in quorum mode (option "nodes" received ` +
          `${this.#drivers.length} nodes); connect it with "url", "sentinel" or "cluster" (see docs/semaphore.md)`,
      );
    }
  }
}

/** A node's URL without its credentials, to show in inspections. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'redis';
  }
}
