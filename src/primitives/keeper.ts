import { monotonic } from '../clock.ts';
import type { Context } from '../context.ts';
import { settledWithin } from '../driver/timeouts.ts';
import {
  ConnectionClosedError,
  type LeaseholdError,
  LockReleasedError,
  LockTimeoutError,
  QuorumError,
  RedisUnavailableError,
  toLeaseholdError,
} from '../errors.ts';
import { Lease, type LeaseCore, type LeaseHost, type LeaseInit } from '../lease.ts';
import type { ValidAcquireOptions } from '../options.ts';
import { type Attempt, type Waiter, WaitQueue } from '../wait-queue.ts';
import { Held, type Holding } from './held.ts';

/** How long close() waits for attempts in flight and its releases when Redis does not answer. */
const CLOSE_GRACE_MS = 5_000;
/** close() always gives its releases at least this long, even after a long wait for attempts. */
const RELEASE_GRACE_MS = 1_000;

/** The local wait queue a waiter joins: see Keeper.wait. */
export interface WaitSpec {
  key: string;
  watch: readonly string[];
  shared: boolean;
  /** Keys whose local wake (a lease of this process ended) wakes the queue too; see wait(). */
  wakeOn?: readonly string[];
  /** Filters those local wakes by key (a multiLock waits only for the name that blocked it). */
  wakeIf?: (key: string) => boolean;
}

/** A waiter that carries its own attempt (readers and writers of one name differ). */
interface KeeperWaiter extends Waiter<Lease> {
  attempt(): Promise<Attempt<Lease>>;
  /** Why the last attempt could not even ask (Redis or a quorum unreachable), for the timeout error. */
  lastError: LeaseholdError | undefined;
}

/**
 * What the mutex, semaphore, read-write lock, fair lock and election share: per-key local wait queues
 * driven by pushes and retry timers, the bookkeeping of held leases, and close(). One Keeper
 * serves every primitive of an instance, the mutex included.
 * @internal
 */
export class Keeper {
  readonly ctx: Context;
  readonly #host: LeaseHost;
  readonly #queues = new Map<string, { queue: WaitQueue<Lease, KeeperWaiter>; unwatch: () => void }>();
  readonly #held = new Map<Lease, Held>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Keys with a fast-path first attempt in flight (see #first). */
  readonly #firsts = new Set<string>();
  /** Leases lost to a dropped connection whose keys are still to be given back. */
  readonly #orphans = new Set<{ lease: Lease; core: LeaseCore }>();
  /** Other local things to wake by key (fair-lock waiters, election observers). */
  readonly #wakers = new Map<string, Set<() => void>>();
  /** Called by close(): waiters outside the wait queues (fair lock, observers) end themselves. */
  readonly #closers = new Set<() => void>();

  constructor(ctx: Context) {
    this.ctx = ctx;
    this.#host = {
      finished: (lease, error) => this.#finished(lease, error),
    };
  }

  /**
   * `waiting` counts callers, not queues: a queue outlives its last waiter until the attempt in
   * flight returns, and a caller whose timeout already fired is not waiting any more.
   */
  get stats(): { held: number; waiting: number } {
    let waiting = this.#closers.size;
    for (const { queue } of this.#queues.values()) waiting += queue.waiting;
    return { held: this.#held.size, waiting };
  }

  /**
   * Waits in the local queue `queue.key` until `attempt` succeeds. The queue retries on a push for
   * any of `queue.watch`, on a local wake of its key, and at the retry time each failed attempt
   * returns. `queue.shared`: a success may leave room for the next waiter (readers, permits).
   * `withdraw` runs when the waiter ends without the lease (timeout, abort, close, error).
   * `queue.wakeOn`: other keys whose local wake (a lease of this process ended) wakes the queue
   * too, for a queue keyed apart from the keys it waits for (a multiLock's).
   */
  wait(
    name: string,
    queue: WaitSpec,
    options: ValidAcquireOptions,
    attempt: () => Promise<Attempt<Lease>>,
    withdraw?: () => void,
  ): Promise<Lease> {
    const queueKey = queue.key;
    const { signal, timeout } = options;
    if (this.ctx.closed) return Promise.reject(new ConnectionClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const startedAt = monotonic();
    return new Promise<Lease>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const cleanup = () => {
        waiter.settled = true;
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (error: unknown) => {
        cleanup();
        this.#queues.get(queueKey)?.queue.remove(waiter);
        withdraw?.();
        reject(error);
      };
      const onAbort = () => {
        if (!waiter.settled) fail(signal?.reason);
      };
      const waiter: KeeperWaiter = {
        settled: false,
        oneShot: timeout === 0,
        attempt,
        resolve: (lease) => {
          cleanup();
          // Shared leases (readers, permits): the next local waiter may get in too, so try it now.
          if (queue.shared) this.#queues.get(queueKey)?.queue.wake();
          this.ctx.emit('acquired', {
            name,
            fencingToken: lease.fencingToken,
            waited: monotonic() - startedAt,
          });
          resolve(lease);
        },
        giveUp: (error) => fail(error ?? timeoutError()),
        lastError: undefined,
      };
      // Unreachable nodes are a different failure than a busy lock: say which one it was.
      const timeoutError = () =>
        waiter.lastError instanceof QuorumError
          ? waiter.lastError
          : new LockTimeoutError(name, timeout, waiter.lastError);
      if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
        timer = setTimeout(() => {
          if (!waiter.settled) fail(timeoutError());
        }, timeout);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#queues.has(queueKey) || this.#firsts.has(queueKey)) this.#queueFor(queue).add(waiter);
      else this.#first(queue, waiter);
    });
  }

  /**
   * The uncontended fast path: nobody in this process waits for `key`, so attempt once before
   * building a queue and its watches (a third of the cost of an uncontended acquire). A busy
   * lock sends the waiter to the queue with the attempt's verdict; a push that arrived in the
   * meantime (counted by the dispatcher) makes the queue attempt again at once instead.
   */
  #first(spec: WaitSpec, waiter: KeeperWaiter): void {
    const key = spec.key;
    this.#firsts.add(key);
    const pushes = this.ctx.dispatcher.pushes;
    const done = (result: Attempt<Lease> | undefined, error?: unknown) => {
      this.#firsts.delete(key);
      // Waiters that queued behind this attempt have not attempted yet.
      const queued = this.#queues.get(key)?.queue;
      if (result !== undefined && 'acquired' in result) {
        if (waiter.settled) void result.acquired.release().catch(() => {});
        else waiter.resolve(result.acquired);
        queued?.wake();
        return;
      }
      if (waiter.settled) {
        queued?.wake();
        return;
      }
      if (result === undefined) {
        waiter.giveUp(error);
        queued?.wake();
        return;
      }
      if (this.ctx.closed) {
        waiter.giveUp(new ConnectionClosedError());
        return;
      }
      if (waiter.oneShot) {
        waiter.giveUp();
        queued?.wake();
        return;
      }
      const quiet = queued === undefined && this.ctx.dispatcher.pushes === pushes;
      // Whoever queued meanwhile arrived after this waiter: it goes first.
      this.#queueFor(spec).add(waiter, quiet ? result.retryIn : undefined, true);
    };
    this.#attemptOf(waiter).then(done, (error: unknown) => done(undefined, error));
  }

  /** One attempt of `waiter`, with Redis or a quorum unreachable turned into a retry later. */
  #attemptOf(waiter: KeeperWaiter): Promise<Attempt<Lease>> {
    return waiter.attempt().then(
      (result) => {
        waiter.lastError = undefined;
        return result;
      },
      (error: unknown) => {
        // Unreachable: try again after a pause, or at once when the connection comes back.
        if (error instanceof RedisUnavailableError || error instanceof QuorumError) {
          waiter.lastError = error;
          return { retryIn: this.ctx.retryDelay };
        }
        throw error;
      },
    );
  }

  /** Wakes the local queue and wakers of `key` (this process's own writes bring no push: NOLOOP). */
  wake(key: string): void {
    this.#queues.get(key)?.queue.wake();
    for (const waker of this.#wakers.get(key) ?? []) waker();
  }

  /** Registers a local waker for `key`; returns its removal. */
  onWake(key: string, waker: () => void): () => void {
    let set = this.#wakers.get(key);
    if (set === undefined) {
      set = new Set();
      this.#wakers.set(key, set);
    }
    set.add(waker);
    return () => {
      set.delete(waker);
      if (set.size === 0 && this.#wakers.get(key) === set) this.#wakers.delete(key);
    };
  }

  /** Registers something close() must end; returns its removal. */
  onClose(closer: () => void): () => void {
    this.#closers.add(closer);
    return () => this.#closers.delete(closer);
  }

  /** Wraps a lease just granted by Redis: renewal, notifications, and close() bookkeeping. */
  hold(init: Omit<LeaseInit, 'host'>, holding: Holding, make = (i: LeaseInit) => new Lease(i)): Lease {
    // Completes the caller's fresh object instead of copying it (a copy per acquire showed in profiles).
    const lease = make(Object.assign(init, { host: this.#host }));
    if (this.ctx.closed) {
      // close() raced with this acquisition: give it back instead of stranding it.
      lease.end(new ConnectionClosedError());
      void this.track(init.core.release(lease)).catch(() => {});
      throw new ConnectionClosedError();
    }
    const held = new Held(lease, init.core, holding, this.ctx.renewer);
    this.ctx.dispatcher.add(held.key, held);
    for (const key of held.also) this.ctx.dispatcher.add(key, held);
    this.#held.set(lease, held);
    this.ctx.renewer.add(lease, init.core);
    // A push for a key that overtook the acquisition's reply: act on it now.
    const { dispatcher } = this.ctx;
    let changed = dispatcher.changedSince(held.key, init.sentAt);
    for (const key of held.also) changed ||= dispatcher.changedSince(key, init.sentAt);
    if (changed) held.onChange(false);
    return lease;
  }

  /**
   * A connection went down: every lease whose key lived behind it is lost at once (nobody can
   * tell this process about changes any more). Their keys are given back after the reconnect.
   */
  loseWhere(affects: (key: string) => boolean, detail: string): void {
    for (const [lease, held] of [...this.#held]) {
      if (!affects(held.key) && !held.also.some(affects)) continue;
      this.#orphans.add({ lease, core: held.core });
      lease.lose('disconnected', detail);
    }
  }

  /** After a reconnect: release the keys of leases lost to the disconnect (compare-and-delete). */
  releaseOrphans(): void {
    const now = monotonic();
    for (const orphan of [...this.#orphans]) {
      this.#orphans.delete(orphan);
      // Past its validity the key has expired by itself (or belongs to someone else: no harm).
      if (orphan.lease.validUntil <= now) continue;
      void this.track(orphan.core.release(orphan.lease)).catch((error: unknown) => {
        if (error instanceof RedisUnavailableError) this.#orphans.add(orphan);
      });
    }
  }

  /** Keeps `promise` in the set close() waits for. */
  track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise);
    const done = () => this.#inFlight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** Runs one script call, mapping failures to LeaseholdErrors (ConnectionClosedError once closed). */
  async run(promise: Promise<unknown>, operation: string): Promise<unknown> {
    try {
      return await this.track(promise);
    } catch (error) {
      if (this.ctx.closed) throw new ConnectionClosedError();
      throw toLeaseholdError(error, operation);
    }
  }

  /** close(): waiters reject, attempts in flight settle, held leases are released. */
  async close(): Promise<void> {
    for (const { queue, unwatch } of this.#queues.values()) {
      for (const waiter of queue.drain()) waiter.giveUp(new ConnectionClosedError());
      unwatch();
    }
    this.#queues.clear();
    for (const closer of [...this.#closers]) closer();
    this.#closers.clear();
    // A hung Redis (SIGSTOPped, blackholed) never answers: close() gives it a grace period,
    // then moves on. Keys it could not release expire with their TTL.
    const deadline = monotonic() + CLOSE_GRACE_MS;
    while (this.#inFlight.size > 0 && monotonic() < deadline) {
      await settledWithin(Promise.allSettled([...this.#inFlight]), deadline - monotonic());
    }
    const held = [...this.#held.entries()];
    for (const [lease] of held) lease.end(LockReleasedError.quick(lease.name, 'released by close()'));
    const releases = Promise.allSettled(held.map(([lease, { core }]) => core.release(lease)));
    await settledWithin(releases, Math.max(deadline - monotonic(), RELEASE_GRACE_MS));
  }

  #queueFor({ key, watch, wakeOn = [], wakeIf }: WaitSpec): WaitQueue<Lease, KeeperWaiter> {
    const existing = this.#queues.get(key);
    if (existing !== undefined) return existing.queue;
    const queue = new WaitQueue<Lease, KeeperWaiter>({
      attempt: (waiter) => this.#attemptOf(waiter),
      discard: (lease) => void lease.release().catch(() => {}),
      onIdle: () => {
        const entry = this.#queues.get(key);
        if (entry?.queue !== queue) return;
        entry.unwatch();
        this.#queues.delete(key);
      },
    });
    const unwatchers = watch.map((k) => this.ctx.dispatcher.watch(k, { onChange: () => queue.wake() }));
    for (const k of wakeOn) {
      unwatchers.push(
        this.onWake(k, () => {
          if (wakeIf?.(k) ?? true) queue.wake();
        }),
      );
    }
    this.#queues.set(key, {
      queue,
      unwatch: () => {
        for (const u of unwatchers) u();
      },
    });
    return queue;
  }

  #finished(lease: Lease, error: LeaseholdError | undefined): void {
    const held = this.#held.get(lease);
    if (held === undefined) return;
    this.#held.delete(lease);
    this.ctx.dispatcher.remove(held.key, held);
    for (const key of held.also) this.ctx.dispatcher.remove(key, held);
    held.ended();
    this.ctx.renewer.delete(lease);
    const { name, fencingToken } = lease;
    if (error === undefined || error instanceof LockReleasedError)
      this.ctx.emit('released', { name, fencingToken });
    else this.ctx.emit('lost', { name, fencingToken, error });
    for (const key of held.wake) this.wake(key);
  }

  /**
   * The retry delay after a failed attempt: Redis's hint, capped by polling when there are no
   * pushes. A PTTL hint is aimed a millisecond early, because Node's timers fire up to a
   * millisecond late; the attempt then usually sees PTTL 0 or 1, and a key expiring within the
   * millisecond is retried on the next turns of the event loop (a few round trips at most, see
   * WaitQueue), which takes over a crashed holder's lock within a round trip of its expiry.
   */
  retryIn(hint: number, fallback: number, tracking = this.ctx.driver.tracking): number {
    // -2 (PTTL of a missing key): gone by the time it was read, so try again now.
    const untilChange = hint === -2 ? 0 : hint < 0 ? fallback : hint <= 1 ? 0 : hint - 1;
    return tracking ? untilChange : Math.min(untilChange, this.ctx.retryDelay);
  }
}
