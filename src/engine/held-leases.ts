import { monotonic } from '../base/clock.ts';
import { settledWithin } from '../base/timeouts.ts';
import { ConnectionClosedError, type LeaseholdError, LockReleasedError } from '../errors.ts';
import { Lease, type LeaseHost, type LeaseInit } from '../lease.ts';
import type { Context } from './context.ts';
import { Held, type Holding } from './held.ts';

/** close() always gives its releases at least this long, even after a long wait for attempts. */
const RELEASE_GRACE_MS = 1_000;

/**
 * The one registry of every lease an instance holds, whatever its primitive: renewal (through
 * the Renewer), verification on pushes (through the Dispatcher), loss on a dropped connection,
 * and release on close().
 */
export class HeldLeases {
  readonly #ctx: Context;
  readonly #host: LeaseHost;
  readonly #held = new Map<Lease, Held>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Wakes this process's waiters for a key (no push comes for its own writes). */
  readonly #wake: (key: string) => void;

  constructor(ctx: Context, wake: (key: string) => void) {
    this.#ctx = ctx;
    this.#wake = wake;
    this.#host = {
      finished: (lease, error) => this.#finished(lease, error),
      giveBack: (lease, send) => ctx.giveBacks.add(lease.name, send, lease.ttl),
    };
  }

  get size(): number {
    return this.#held.size;
  }

  /** Wraps a lease just granted by Redis: renewal, notifications, and close() bookkeeping. */
  hold(init: Omit<LeaseInit, 'host'>, holding: Holding, make = (i: LeaseInit) => new Lease(i)): Lease {
    // Completes the caller's fresh object instead of copying it: no copy on every acquisition's path.
    const lease = make(Object.assign(init, { host: this.#host }));
    if (this.#ctx.closed) {
      // close() raced with this acquisition: give it back instead of stranding it.
      lease.end(new ConnectionClosedError());
      this.#ctx.giveBacks.send(
        lease.name,
        () => init.core.release(lease),
        lease.ttl,
        (p) => this.track(p),
      );
      throw new ConnectionClosedError();
    }
    const { dispatcher, renewer } = this.#ctx;
    const held = new Held(lease, init.core, holding, renewer);
    this.#endOthers(held, holding);
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
   * Ends this process's other leases on the keys `held` excludes (Holding.excludes): its grant
   * proves them gone (a SET NX found the key free, a force overwrote it), and Redis tells no
   * connection of this process about its own writes (NOLOOP), nor a polling one about anything.
   * Every lease of this instance is in the dispatcher under its keys, so it is found there.
   */
  #endOthers(held: Held, holding: Holding): void {
    for (const key of held.excludes(holding)) {
      for (const other of this.#ctx.dispatcher.listenersOf(key)) {
        if (!(other instanceof Held) || other === held) continue;
        other.lease.lose('taken', `taken over by another lease of this process on "${held.lease.name}"`);
      }
    }
  }

  /**
   * A connection went down: every lease whose key lived behind it is lost at once (nobody can
   * tell this process about changes any more). Their keys are given back once a connection
   * works again (GiveBacks), so that waiters elsewhere need not wait for the TTL. `since`: a
   * server restarted, and leases Redis confirmed from then on were confirmed by the new one.
   */
  loseWhere(affects: (key: string) => boolean, detail: string, since?: number): void {
    for (const [lease, held] of [...this.#held]) {
      if (since !== undefined && lease.confirmedAt >= since) continue;
      const { core } = held;
      const hit = core.lostWith === undefined ? affects : (key: string) => core.lostWith!(key, affects);
      if (!hit(held.key) && !held.also.some(hit)) continue;
      this.#ctx.giveBacks.add(lease.name, () => core.release(lease), lease.ttl);
      lease.lose('disconnected', detail);
    }
  }

  /**
   * Keeps `promise` in the set close() waits for. A set of the promises, not a count: close()
   * waits on them after the callers' own continuations, which may track more (the give-back of an
   * acquisition that raced with close(): a count reached zero before it was tracked, and a GLIDE
   * run on Valkey 8.1 left nine keys behind).
   */
  track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise);
    const done = () => this.#inFlight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /**
   * track() for a caller that awaits `promise` itself: in the set until the caller's `leave()`,
   * which runs after its continuation, as close() needs (see track); one then() fewer per call.
   */
  enter(promise: Promise<unknown>): void {
    this.#inFlight.add(promise);
  }

  leave(promise: Promise<unknown>): void {
    this.#inFlight.delete(promise);
  }

  /** close(): attempts in flight settle, then every held lease is ended and released. */
  async close(): Promise<void> {
    // A hung Redis (SIGSTOPped, black-holed) never answers: attempts in flight settle within
    // commandTimeout (the drivers' watchdogs fail them by then), and releases get what is left
    // of it, at least RELEASE_GRACE_MS. Keys they could not release expire with their TTL.
    const deadline = monotonic() + this.#ctx.commandTimeout;
    while (this.#inFlight.size > 0 && monotonic() < deadline) {
      await settledWithin(Promise.allSettled([...this.#inFlight]), deadline - monotonic());
    }
    const held = [...this.#held.entries()];
    for (const [lease] of held) lease.end(LockReleasedError.quick(lease.name, 'released by close()'));
    // With them, one last try of the give-backs still pending: after close() nothing retries them.
    const releases = Promise.allSettled([
      ...held.map(([lease, { core }]) => core.release(lease)),
      this.#ctx.giveBacks.flush(),
    ]);
    await settledWithin(releases, Math.max(deadline - monotonic(), RELEASE_GRACE_MS));
  }

  /** destroy(): every held lease ends now, unreleased (its keys lapse at their TTL). */
  destroy(): void {
    for (const [lease] of [...this.#held.entries()])
      lease.end(
        LockReleasedError.quick(lease.name, 'ended by destroy(): not released, its key lapses at its TTL'),
      );
  }

  #finished(lease: Lease, error: LeaseholdError | undefined): void {
    const held = this.#held.get(lease);
    if (held === undefined) return;
    const { dispatcher, renewer } = this.#ctx;
    this.#held.delete(lease);
    dispatcher.remove(held.key, held);
    for (const key of held.also) dispatcher.remove(key, held);
    renewer.delete(lease);
    const { name, fencingToken } = lease;
    if (error === undefined || error instanceof LockReleasedError)
      this.#ctx.emit('released', { name, fencingToken });
    else this.#ctx.emit('lost', { name, fencingToken, error });
    for (const key of held.wake) this.#wake(key);
  }
}
