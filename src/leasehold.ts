import { EventEmitter } from 'node:events';
import { connectDrivers, createDrivers } from './api/open-drivers.ts';
import { type Wiring, wire } from './api/wiring.ts';
import { loadTelemetry } from './base/telemetry.ts';
import { Observer } from './diagnostics.ts';
import type { Driver } from './driver/types.ts';
import type { Context } from './engine/context.ts';
import type { Engine } from './engine/engine.ts';
import type { Spec } from './engine/spec.ts';
import { ConnectionClosedError, NotificationsError, ScriptingUnavailableError } from './errors.ts';
import type { LeaseholdEvents } from './events.ts';
import type { Lease } from './lease.ts';
import {
  type AcquireOptions,
  type ConnectOptions,
  checkAcquireOptions,
  checkConnectOptions,
  checkMultiLock,
  checkName,
  checkOnceOptions,
  type DriverKind,
  type InspectOptions,
  type ListOptions,
  type MultiLockOptions,
  type OnceOptions,
  type SemaphoreOptions,
  type ValidConnectOptions,
} from './options/index.ts';
import type { Election } from './primitives/election.ts';
import type { FairLock } from './primitives/fair.ts';
import { PrimitiveHandles } from './primitives/handles.ts';
import { type IdempotentOptions, idempotent } from './primitives/idempotent.ts';
import type { Inspection } from './primitives/inspection.ts';
import { MultiLock } from './primitives/multi-lock.ts';
import { MutexSpec } from './primitives/mutex.ts';
import type { ReadWriteLock } from './primitives/rwlock.ts';
import type { Semaphore } from './primitives/semaphore.ts';
import { type LeaseWork, withLease } from './primitives/with-lease.ts';
import { scriptingRefusal } from './runners/failures.ts';

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
  readonly #observer = new Observer(this);
  readonly #wiring: Wiring;
  readonly #engine: Engine;
  readonly #mutex = new MutexSpec();
  #closing: Promise<void> | undefined;
  #destroying: Promise<void> | undefined;

  private constructor(options: ValidConnectOptions, drivers: readonly Driver[]) {
    super();
    this.#options = options;
    this.#drivers = drivers;
    const emit: Context['emit'] = (event, payload) => {
      // A throwing user listener must not break the lock machinery that emitted the event.
      try {
        this.#observer.observe(event, payload);
        (this.emit as (e: string, p: unknown) => boolean)(event, payload);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    };
    this.#wiring = wire(options, drivers, emit, () => this.#closing !== undefined);
    this.#engine = this.#wiring.engine;
    this.#others = new PrimitiveHandles(this.#engine, { ttl: options.ttl });
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
    const unproven = drivers.some((driver) => driver.proof?.ok !== true);
    if (unproven && valid.memory === undefined && valid.postgres === undefined) {
      // No canary script proved that scripts run (polling, or the canary failed): a read-only one
      // does, so that a server without scripting fails here, saying so, not at the first acquire.
      // Before start(), which announces a fallback to polling once connect() has returned.
      const refused = await lh.inspect('leasehold-scripting-probe').then(
        () => undefined,
        (error: unknown) => (error instanceof ScriptingUnavailableError ? error : undefined),
      );
      if (refused !== undefined) {
        await lh.close();
        const cause = refused.cause instanceof Error ? refused.cause : refused;
        throw new ScriptingUnavailableError(`connect: ${scriptingRefusal(cause.message) ?? cause.message}`, {
          cause,
        });
      }
    }
    lh.#wiring.connections.start();
    if (valid.notifications === 'tracking' && lh.#wiring.connections.mode !== 'tracking') {
      const reason = lh.#wiring.connections.failedProof()?.reason;
      await lh.close();
      throw new NotificationsError(
        `notifications: 'tracking' was asked for, but invalidation pushes could not be proven (${reason?.message ?? 'no proof'}); ` +
          "use notifications: 'auto' to poll in that case (docs/compatibility.md)",
        { cause: reason },
      );
    }
    return lh;
  }

  /**
   * How this instance learns of changes now: 'tracking' (invalidation pushes, proven by a canary
   * on connect and after every reconnect) or 'polling' (every `retryDelay`; holders at their next
   * extension). With `notifications: 'auto'` it falls back to 'polling' when the proof fails.
   */
  get notifications(): 'tracking' | 'polling' {
    return this.#wiring.connections.mode;
  }

  /**
   * Leases held, names waited on, keys watched, the notification mode, the driver, and what the
   * last canary proved (the tracking rule the server follows, or why pushes are not trusted).
   */
  get stats(): {
    held: number;
    waiting: number;
    /** Of those waiting, the ones listening for a direct grant (docs/direct-grants.md). */
    grantWaiters: number;
    watchedKeys: number;
    renewing: number;
    notifications: 'tracking' | 'polling';
    /**
     * Quorum mode: leases held on a majority but not on every node at their last extension (a
     * node restarted empty, or is down). The next extension puts them back where it can.
     */
    underReplicated: number;
    /**
     * Give-backs Redis has not confirmed yet (releases, keys of acquisitions whose reply never
     * came), retried as soon as a connection works again (the 'pending-releases' event).
     */
    pendingReleases: number;
    driver: DriverKind | 'memory' | 'postgres';
    trackingRule: 'declared-keys' | 'read-keys' | undefined;
    notificationsReason: string | undefined;
  } {
    const proof = this.#wiring.connections.failedProof() ?? this.#drivers[0]?.proof;
    return {
      ...this.#engine.stats,
      watchedKeys: this.#wiring.dispatcher.size,
      renewing: this.#wiring.renewer.size,
      notifications: this.#wiring.connections.mode,
      underReplicated: this.#wiring.quorum?.partial ?? 0,
      pendingReleases: this.#wiring.giveBacks.size,
      driver:
        this.#options.memory !== undefined
          ? 'memory'
          : this.#options.postgres !== undefined
            ? 'postgres'
            : this.#options.driver,
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
      return this.#engine.acquire(this.#mutex, name, undefined, checkAcquireOptions(options, this.#options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease, or undefined when another holder has it. */
  async tryAcquire(name: string, options?: OnceOptions): Promise<Lease | undefined> {
    checkName(name);
    const valid = checkOnceOptions(options, this.#options, 'tryAcquire');
    return this.#engine.tryAcquire(this.#mutex, name, undefined, valid);
  }

  /** Takes the lock over from whoever holds it; their `signal` aborts at once. */
  async forceAcquire(name: string, options?: OnceOptions): Promise<Lease> {
    checkName(name);
    return this.#engine.force(
      this.#mutex,
      name,
      undefined,
      checkOnceOptions(options, this.#options, 'forceAcquire'),
    );
  }

  /**
   * Runs `fn` while holding the lock and releases it afterwards, also when `fn` throws. `fn` gets
   * the lease and a signal that aborts when the lease is lost or `options.signal` aborts: pass it
   * on to the work so that it stops either way.
   * @example
   * await lh.withLock('cron:purge', (lease, signal) => purge({ signal, fence: lease.fencingToken }));
   */
  withLock<T>(name: string, fn: LeaseWork<Lease, T>, options?: AcquireOptions): Promise<T> {
    return withLease(() => this.acquire(name, options), fn, options, 'withLock');
  }

  /**
   * Runs `fn` once per `key` across every process and keeps its result for `options.keep` ms
   * (docs/idempotency.md): a caller that comes while it runs waits for it (woken when the result is
   * stored) and gets the same result; one that comes later gets it without running `fn`. A
   * `fingerprint` that differs from the stored one rejects with IdempotencyConflictError; `fn`
   * throwing stores nothing (the next caller runs it); a run that never finished (its holder
   * crashed or lost the lock) makes later callers reject with OutcomeUnknownError.
   * @example
   * const receipt = await lh.idempotent(`charge:${idempotencyKey}`, () => charge(order), {
   *   fingerprint: sha256(body),
   * });
   */
  idempotent<T>(key: string, fn: LeaseWork<Lease, T>, options?: IdempotentOptions): Promise<T> {
    try {
      checkName(key, 'key');
      if (typeof fn !== 'function') throw new TypeError('leasehold: idempotent needs a function to run');
      return idempotent(
        this.#engine,
        this.#mutex as Spec<unknown, undefined>,
        key,
        fn,
        options,
        this.#options,
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Aborts every outstanding lease's signal (reason LockReleasedError), releases the keys,
   * rejects waiters with ConnectionClosedError and disconnects. Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closing = (async () => {
        await this.#engine.close().catch(() => {});
        this.#wiring.renewer.close();
        await Promise.all(this.#drivers.map((driver) => driver.close()));
      })();
    }
    return this.#closing;
  }

  /**
   * Ends the instance at once, for a process that must exit now or a server that hangs close():
   * waiters reject with ConnectionClosedError, leases' signals abort (LockReleasedError) without
   * their keys being released (each lapses at its TTL, so other processes wait that long), calls
   * in flight reject, and the sockets are cut without waiting for any reply. Idempotent; also
   * ends a close() still under way.
   */
  destroy(): Promise<void> {
    if (this.#destroying === undefined) {
      this.#engine.destroy();
      this.#wiring.renewer.close();
      const cut = this.#drivers.map((driver) => driver.close(true).catch(() => {}));
      this.#destroying = Promise.all(cut).then(() => {});
      this.#closing ??= this.#destroying;
    }
    return this.#destroying;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // --- other primitives ---

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
    return new MultiLock(this.#engine, valid.names, { ttl: valid.ttl });
  }

  readonly #others: PrimitiveHandles;

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
      return this.#wiring.inspector.inspect(name, options);
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
      return this.#wiring.inspector.list(options);
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
