import type { ScriptCall } from '../driver/types.ts';
import { ConnectionClosedError, QuorumError, toLeaseholdError } from '../errors.ts';
import type { Lease, LeaseCore, LeaseInit } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import { drift, monotonic } from './clock.ts';
import type { Context } from './context.ts';
import type { Holding } from './held.ts';
import { stamp } from './owner.ts';
import { Registry } from './registry.ts';
import type { Grant, Runner } from './runner.ts';
import type { Spec } from './spec.ts';
import { SpecCore, SpecOp } from './spec-core.ts';
import type { Attempt } from './wait-queue.ts';
import { Waiting, type WaitSpec } from './waiting.ts';

export type { WaitSpec } from './waiting.ts';

/**
 * Runs every primitive's Spec: one wait loop (Waiting), one registry of held leases (Registry),
 * batched renewal (one LeaseCore per spec for the Renewer), all on one Runner (one Redis, or a
 * quorum). Primitives describe keys and scripts; only the engine sends them.
 * @internal
 */
export class Engine {
  readonly #ctx: Context;
  readonly #waiting: Waiting;
  readonly #registry: Registry;
  readonly #cores = new Map<Spec<never, never>, SpecCore<never, never>>();

  constructor(ctx: Context) {
    this.#ctx = ctx;
    this.#waiting = new Waiting(ctx);
    this.#registry = new Registry(ctx, (key) => this.#waiting.wake(key));
  }

  get prefix(): string {
    return this.#ctx.prefix;
  }

  get closed(): boolean {
    return this.#ctx.closed;
  }

  /** The instance's runner for lock specs (one Redis or a quorum). */
  get runner(): Runner {
    return this.#ctx.runner;
  }

  get stats(): { held: number; waiting: number } {
    return { held: this.#registry.size, waiting: this.#waiting.waiting };
  }

  /** Waits for `spec`'s lease on `name` (see Waiting.wait for timeout, signal and close). */
  acquire<K, R>(spec: Spec<K, R>, name: string, request: R, options: ValidAcquireOptions): Promise<Lease> {
    const { registers } = spec;
    if (registers !== undefined) return this.#acquireRegistered(spec, registers, name, request, options);
    // The attempt works out its keys each time rather than keeping them: a closure per waiter,
    // and a thousand waiters, made the keys object a twentieth of a waiter's memory.
    const queue = spec.waiting(spec.keys(this.#ctx.prefix, name), request, '');
    return this.#waiting.wait(name, queue, options, () =>
      this.#attempt(spec, name, request, options.ttl, this.stamp(options.owner), false),
    );
  }

  /** A registering waiter's stored value is its place in Redis: one for the whole wait. */
  #acquireRegistered<K, R>(
    spec: Spec<K, R>,
    registers: NonNullable<Spec<K, R>['registers']>,
    name: string,
    request: R,
    options: ValidAcquireOptions,
  ): Promise<Lease> {
    const stored = this.stamp(options.owner);
    const join = options.timeout !== 0;
    const queue = spec.waiting(spec.keys(this.#ctx.prefix, name), request, stored);
    return this.#waiting.wait(
      name,
      queue,
      options,
      () => this.#attempt(spec, name, request, options.ttl, stored, join),
      () => {
        if (!join) return;
        const keys = spec.keys(this.#ctx.prefix, name);
        this.#withdraw(spec, keys, registers.withdraw(keys, stored));
      },
    );
  }

  /** One attempt; undefined when busy. Announces the lease as a wait queue would. */
  async tryAcquire<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    { ttl, owner }: { ttl: number; owner?: string | undefined },
  ): Promise<Lease | undefined> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    const result = await this.#attempt(spec, name, request, ttl, this.stamp(owner), false);
    if (!('acquired' in result)) return undefined;
    this.acquired(result.acquired);
    return result.acquired;
  }

  /** Takes `spec`'s lock whoever holds it (spec.force); the previous holder hears of it at once. */
  async force<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    { ttl, owner }: { ttl: number; owner?: string | undefined },
  ): Promise<Lease> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    if (spec.force === undefined) throw new TypeError(`leasehold: ${spec.operation} cannot be forced`);
    const keys = spec.keys(this.#ctx.prefix, name);
    const stored = this.stamp(owner);
    const call = spec.force(keys, stored, ttl);
    const sentAt = monotonic();
    const op = new SpecOp(spec, 'forceAcquire', name, keys, stored, ttl, request, call, true);
    const grant = await this.#registry.track(this.#runnerFor(spec).acquire(op));
    if (!('fence' in grant)) {
      throw new QuorumError('forceAcquire: a majority took the lock but did not keep it to the end');
    }
    const lease = this.#hold(spec, name, keys, request, stored, grant.fence, ttl, sentAt);
    this.acquired(lease);
    return lease;
  }

  /** One attempt of `spec`: the lease, or when to try again. */
  async #attempt<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    ttl: number,
    stored: string,
    join: boolean,
  ): Promise<Attempt<Lease>> {
    const runner = this.#runnerFor(spec);
    const keys = spec.keys(this.#ctx.prefix, name);
    const call = spec.acquire(keys, stored, ttl, request, join);
    const op = new SpecOp(spec, spec.operation, name, keys, stored, ttl, request, call);
    const sentAt = monotonic();
    let grant: Grant;
    try {
      grant = await this.#registry.track(runner.acquire(op));
    } catch (error) {
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw error;
    }
    if ('fence' in grant) {
      // The reply came so late that the lease's validity already ran out (a stalled event loop,
      // a slow network): handing it out would give the caller a lease that is lost on arrival.
      // Give the key back and try again after retryDelay: whatever slowed this reply is likely
      // to slow the next one, and retrying at once would spin on Redis.
      if (monotonic() >= sentAt + ttl - drift(ttl)) {
        void this.#registry.track(runner.release([op.release()])).catch(() => {});
        return { retryIn: this.#ctx.retryDelay };
      }
      return { acquired: this.#hold(spec, name, keys, request, stored, grant.fence, ttl, sentAt) };
    }
    // The key outlives its TTL only until someone touches it, and Redis's own expiry push can
    // lag by seconds on a busy server: retry at the holder's remaining TTL ourselves.
    const retryIn = this.retryIn(grant.hint, ttl, runner.tracking);
    // A registration lapses `ttl` after the waiter's last attempt: refresh it well before that.
    return { retryIn: spec.registers === undefined ? retryIn : Math.min(retryIn, ttl / 3) };
  }

  #hold<K, R>(
    spec: Spec<K, R>,
    name: string,
    keys: K,
    request: R,
    stored: string,
    fencingToken: bigint,
    ttl: number,
    sentAt: number,
  ): Lease {
    const core = this.#coreFor(spec);
    const init = { name, stored, fencingToken, ttl, sentAt, core, detail: request };
    const make = spec.make === undefined ? undefined : (i: LeaseInit) => spec.make!(i);
    const lease = this.hold(init, spec.holding(keys), make);
    const wake = spec.granted?.(lease, keys);
    if (wake !== undefined) for (const key of wake) this.#waiting.wake(key);
    return lease;
  }

  /** A registered waiter gave up: withdraw it (best effort: it lapses at its deadline anyway). */
  #withdraw<K, R>(spec: Spec<K, R>, keys: K, call: ScriptCall): void {
    const done = this.#registry.track(this.#runnerFor(spec).eval(call, 'withdraw'));
    done.then(
      (reply) => {
        const next = spec.registers?.withdrawn?.(reply, keys);
        if (next !== undefined) this.#waiting.wake(next);
      },
      () => {},
    );
  }

  /** The LeaseCore the Renewer batches `spec`'s leases by. */
  #coreFor<K, R>(spec: Spec<K, R>): LeaseCore {
    let core = this.#cores.get(spec as Spec<never, never>) as SpecCore<K, R> | undefined;
    if (core === undefined) {
      core = new SpecCore(spec, this.#runnerFor(spec), this.#ctx.prefix, (key) => this.#waiting.wake(key));
      this.#cores.set(spec as Spec<never, never>, core as SpecCore<never, never>);
    }
    return core;
  }

  #runnerFor<K, R>(spec: Spec<K, R>): Runner {
    if (spec.quorum !== undefined) return this.#ctx.runner;
    const single = this.#ctx.single;
    if (single === undefined)
      throw new TypeError(`leasehold: ${spec.operation} needs one Redis, not a quorum`);
    return single;
  }

  /** One raw script call of `spec` (a count, an observer's read): failures as LeaseholdErrors. */
  eval<K, R>(spec: Spec<K, R>, call: ScriptCall, operation: string): Promise<unknown> {
    return this.#guard(() => this.#runnerFor(spec).eval(call, operation), operation);
  }

  /** One plain command next to `spec`'s keys (an election's HMGET). */
  command<K, R>(spec: Spec<K, R>, args: readonly string[], operation: string): Promise<unknown> {
    return this.#guard(() => this.#runnerFor(spec).command(args, operation), operation);
  }

  /** Sends only while open: a call sent after close() would fail as "Redis unavailable". */
  async #guard(send: () => Promise<unknown>, operation: string): Promise<unknown> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    try {
      return await this.#registry.track(send());
    } catch (error) {
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw toLeaseholdError(error, operation);
    }
  }

  /** The stored value of a new lease: a fresh token stamped with its owner (src/engine/owner.ts). */
  stamp(owner: string | undefined): string {
    return stamp(owner ?? this.#ctx.owner);
  }

  /** Announces a lease taken outside a wait queue (tryAcquire), as the queues do theirs. */
  acquired(lease: Lease): void {
    this.#ctx.emit('acquired', { name: lease.name, fencingToken: lease.fencingToken, waited: 0 });
  }

  // --- for specs with their own attempt (the multiLock) and for observers ---

  wait(
    name: string,
    queue: WaitSpec,
    options: ValidAcquireOptions,
    attempt: () => Promise<Attempt<Lease>>,
    withdraw?: () => void,
  ): Promise<Lease> {
    return this.#waiting.wait(name, queue, options, attempt, withdraw);
  }

  hold(init: Omit<LeaseInit, 'host'>, holding: Holding, make?: (init: LeaseInit) => Lease): Lease {
    return this.#registry.hold(init, holding, make);
  }

  track<T>(promise: Promise<T>): Promise<T> {
    return this.#registry.track(promise);
  }

  wake(key: string): void {
    this.#waiting.wake(key);
  }

  onWake(key: string, waker: () => void): () => void {
    return this.#waiting.onWake(key, waker);
  }

  onClose(closer: () => void): () => void {
    return this.#waiting.onClose(closer);
  }

  /** Listens for pushes on `key`; returns the removal. */
  watch(key: string, onChange: () => void): () => void {
    return this.#ctx.dispatcher.watch(key, { onChange });
  }

  /** Whether `spec`'s changes are pushed (else its waiters and observers poll). */
  tracking<K, R>(spec: Spec<K, R>): boolean {
    return this.#runnerFor(spec).tracking;
  }

  get retryDelay(): number {
    return this.#ctx.retryDelay;
  }

  loseWhere(affects: (key: string) => boolean, detail: string): void {
    this.#registry.loseWhere(affects, detail);
  }

  releaseOrphans(): void {
    this.#registry.releaseOrphans();
  }

  /** close(): waiters reject, attempts in flight settle, held leases are released. */
  async close(): Promise<void> {
    this.#waiting.close();
    await this.#registry.close();
  }

  /**
   * The retry delay after a failed attempt: Redis's hint, capped by polling when there are no
   * pushes. A PTTL hint is aimed a millisecond early, because Node's timers fire up to a
   * millisecond late; the attempt then usually sees PTTL 0 or 1, and a key expiring within the
   * millisecond is retried on the next turns of the event loop (a few round trips at most, see
   * WaitQueue), which takes over a crashed holder's lock within a round trip of its expiry.
   */
  retryIn(hint: number, fallback: number, tracking: boolean): number {
    // -2 (PTTL of a missing key): gone by the time it was read, so try again now.
    const untilChange = hint === -2 ? 0 : hint < 0 ? fallback : hint <= 1 ? 0 : hint - 1;
    return tracking ? untilChange : Math.min(untilChange, this.#ctx.retryDelay);
  }
}
