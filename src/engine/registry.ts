import { settledWithin } from '../driver/timeouts.ts';
import {
  ConnectionClosedError,
  type LeaseholdError,
  LockReleasedError,
  RedisUnavailableError,
} from '../errors.ts';
import { Lease, type LeaseCore, type LeaseHost, type LeaseInit } from '../lease.ts';
import { monotonic } from './clock.ts';
import type { Context } from './context.ts';
import { Held, type Holding } from './held.ts';

/** How long close() waits for attempts in flight and its releases when Redis does not answer. */
const CLOSE_GRACE_MS = 5_000;
/** close() always gives its releases at least this long, even after a long wait for attempts. */
const RELEASE_GRACE_MS = 1_000;

/**
 * The one registry of every lease an instance holds, whatever its primitive: renewal (through
 * the Renewer), verification on pushes (through the Dispatcher), loss on a dropped connection,
 * and release on close().
 * @internal
 */
export class Registry {
  readonly #ctx: Context;
  readonly #host: LeaseHost;
  readonly #held = new Map<Lease, Held>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Leases lost to a dropped connection whose keys are still to be given back. */
  readonly #orphans = new Set<{ lease: Lease; core: LeaseCore }>();
  /** Wakes this process's waiters for a key (no push comes for its own writes). */
  readonly #wake: (key: string) => void;

  constructor(ctx: Context, wake: (key: string) => void) {
    this.#ctx = ctx;
    this.#wake = wake;
    this.#host = { finished: (lease, error) => this.#finished(lease, error) };
  }

  get size(): number {
    return this.#held.size;
  }

  /** Wraps a lease just granted by Redis: renewal, notifications, and close() bookkeeping. */
  hold(init: Omit<LeaseInit, 'host'>, holding: Holding, make = (i: LeaseInit) => new Lease(i)): Lease {
    // Completes the caller's fresh object instead of copying it (a copy per acquire showed in profiles).
    const lease = make(Object.assign(init, { host: this.#host }));
    if (this.#ctx.closed) {
      // close() raced with this acquisition: give it back instead of stranding it.
      lease.end(new ConnectionClosedError());
      void this.track(init.core.release(lease)).catch(() => {});
      throw new ConnectionClosedError();
    }
    const { dispatcher, renewer } = this.#ctx;
    const held = new Held(lease, init.core, holding, renewer);
    dispatcher.add(held.key, held);
    for (const key of held.also) dispatcher.add(key, held);
    this.#held.set(lease, held);
    renewer.add(lease, init.core);
    // A push for a key that overtook the acquisition's reply: act on it now.
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
      const { core } = held;
      const hit = core.lostWith === undefined ? affects : (key: string) => core.lostWith!(key, affects);
      if (!hit(held.key) && !held.also.some(hit)) continue;
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

  /** close(): attempts in flight settle, then every held lease is ended and released. */
  async close(): Promise<void> {
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

  #finished(lease: Lease, error: LeaseholdError | undefined): void {
    const held = this.#held.get(lease);
    if (held === undefined) return;
    const { dispatcher, renewer } = this.#ctx;
    this.#held.delete(lease);
    dispatcher.remove(held.key, held);
    for (const key of held.also) dispatcher.remove(key, held);
    held.ended();
    renewer.delete(lease);
    const { name, fencingToken } = lease;
    if (error === undefined || error instanceof LockReleasedError)
      this.#ctx.emit('released', { name, fencingToken });
    else this.#ctx.emit('lost', { name, fencingToken, error });
    for (const key of held.wake) this.#wake(key);
  }
}
