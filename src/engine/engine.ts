import { monotonic } from '../base/clock.ts';
import type { ScriptCall } from '../driver/types.ts';
import { ConnectionClosedError, QuorumError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import type { Grant } from '../runners/runner.ts';
import { Attempts, type LeaseMode, type Routed } from './attempts.ts';
import type { Context } from './context.ts';
import { type FollowSource, follow } from './follow.ts';
import { HeldLeases } from './held-leases.ts';
import { Queues } from './queues.ts';
import type { Spec } from './spec.ts';
import { SpecOp } from './spec-core.ts';
import { traceAcquire } from './tracing.ts';
import { Waiter } from './waiter.ts';

/** What a one-attempt call (tryAcquire, forceAcquire) passes: the lease's TTL, owner and modes. */
type OnceOptions = { ttl: number; owner?: string | undefined } & LeaseMode;

/**
 * Runs every primitive's Spec: the waiters (Waiter, one per waiting caller, in Queues' local
 * queues), the leases held (HeldLeases) and batched renewal, all on one Runner (one Redis, or a
 * quorum). Primitives describe keys and scripts; only the engine sends them. Its members are what
 * a primitive's handle calls (acquire, tryAcquire, force, eval, command, follow, oneScript) and
 * what the instance wires to its connections (loseWhere, retryGiveBacks) and close().
 */
export class Engine {
  readonly #ctx: Context;
  readonly #waiting: Queues;
  readonly #held: HeldLeases;
  readonly #attempts: Attempts;
  readonly #wake: (key: string) => void;

  constructor(ctx: Context) {
    this.#ctx = ctx;
    this.#waiting = new Queues(ctx);
    this.#wake = (key) => this.#waiting.wake(key);
    this.#held = new HeldLeases(ctx, this.#wake);
    this.#attempts = new Attempts(ctx, this.#held, this.#wake);
  }

  get prefix(): string {
    return this.#ctx.prefix;
  }

  get stats(): { held: number; waiting: number; grantWaiters: number } {
    return {
      held: this.#held.size,
      waiting: this.#waiting.waiting,
      grantWaiters: this.#ctx.grants?.size ?? 0,
    };
  }

  /** Waits for `spec`'s lease on `name` (see Queues.wait for timeout, signal and close). */
  acquire<K, R>(spec: Spec<K, R>, name: string, request: R, options: ValidAcquireOptions): Promise<Lease> {
    // Direct grants where the spec has them and the instance can subscribe, for a caller that waits.
    const grants = spec.grants !== undefined && options.timeout !== 0 ? this.#ctx.grants : undefined;
    const waiter = new Waiter(this.#attempts, spec, name, request, options, grants, this.#wake);
    return traceAcquire(spec, name, () => this.#waiting.wait(waiter as Waiter, options));
  }

  /** One attempt; undefined when busy. Announces the lease as a wait queue would. */
  tryAcquire<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: OnceOptions,
  ): Promise<Lease | undefined> {
    return traceAcquire(spec, name, () => this.#once(spec, name, request, options));
  }

  async #once<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: OnceOptions,
  ): Promise<Lease | undefined> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    const { ttl, owner } = options;
    const attempts = this.#attempts;
    const stored = attempts.stamp(owner);
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const how = spec.acquire(keys, stored, ttl, request, false);
    const { grant, sentAt } = await attempts.send(spec, name, request, ttl, stored, how, undefined, keys);
    if (!('fence' in grant)) return undefined;
    const result = attempts.granted(spec, name, request, stored, grant, ttl, sentAt, options);
    if (!('acquired' in result)) return undefined;
    this.#announce(result.acquired);
    return result.acquired;
  }

  /** Takes `spec`'s lock whoever holds it (spec.force); the previous holder hears of it at once. */
  force<K, R>(spec: Spec<K, R>, name: string, request: R, options: OnceOptions): Promise<Lease> {
    return traceAcquire(spec, name, () => this.#force(spec, name, request, options));
  }

  async #force<K, R>(spec: Spec<K, R>, name: string, request: R, options: OnceOptions): Promise<Lease> {
    const { ttl, owner } = options;
    if (this.#ctx.closed) throw new ConnectionClosedError();
    if (spec.force === undefined) throw new TypeError(`leasehold: ${spec.operation} cannot be forced`);
    const attempts = this.#attempts;
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const stored = attempts.stamp(owner);
    const call = spec.force(keys, stored, ttl);
    const sentAt = monotonic();
    const op = new SpecOp(spec, 'forceAcquire', name, keys, stored, ttl, request, call, true);
    const runner = attempts.runnerFor(spec);
    let grant: Grant;
    try {
      grant = await this.#held.track(runner.acquire(op));
    } catch (error) {
      attempts.unanswered(runner, op, error);
      throw error;
    }
    if (!('fence' in grant)) {
      throw new QuorumError('forceAcquire: a majority took the lock but did not keep it to the end');
    }
    const lease = attempts.hold(spec, name, request, stored, grant, ttl, sentAt, options);
    this.#announce(lease);
    return lease;
  }

  /** One script of `spec` outside an acquisition (a count, a proclaim): failures as LeaseholdErrors. */
  async eval(
    spec: Routed,
    call: ScriptCall,
    operation: string,
    wakes: readonly string[] = [],
  ): Promise<unknown> {
    const runner = this.#attempts.runnerFor(spec);
    const reply = await this.#attempts.guard(() => runner.eval(call, operation), operation);
    // This process's own writes bring it no push (NOLOOP): wake what they concern here.
    for (const key of wakes) this.#waiting.wake(key);
    return reply;
  }

  /** One plain command next to `spec`'s keys (an election's HMGET). */
  command(spec: Routed, args: readonly string[], operation: string): Promise<unknown> {
    const runner = this.#attempts.runnerFor(spec);
    return this.#attempts.guard(() => runner.command(args, operation), operation);
  }

  /**
   * Follows what `source` reads (an election's change log), yielding each item once, in order:
   * again on every push or local wake for its key, at the time each read names, and on a retry
   * after Redis did not answer. Ends with `signal.reason`, or ConnectionClosedError on close().
   */
  follow<K, R, T>(
    spec: Spec<K, R>,
    source: FollowSource<T>,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<T> {
    const runner = this.#attempts.runnerFor(spec);
    return follow(source, signal, {
      closed: () => this.#ctx.closed,
      onClose: (closer) => this.#waiting.onClose(closer),
      watch: (key, wake) => {
        const unpush = this.#ctx.dispatcher.watch(key, { onChange: wake });
        const unwake = this.#waiting.onWake(key, wake);
        return () => {
          unpush();
          unwake();
        };
      },
      pace: (retryIn) => (runner.tracking ? retryIn : Math.min(retryIn, this.#ctx.retryDelay)),
      retryDelay: this.#ctx.retryDelay,
    });
  }

  /**
   * Whether one script can take all of `keys` of `spec` at once: one Redis (not a quorum), and
   * one Cluster slot. Otherwise a spec takes them in order (InOrder).
   */
  oneScript<K, R>(spec: Spec<K, R>, keys: readonly string[]): boolean {
    const runner = this.#attempts.runnerFor(spec);
    return !runner.replicated && runner.sameSlot(keys);
  }

  /** A connection dropped: the leases whose keys lived behind it are lost (HeldLeases.loseWhere). */
  loseWhere(affects: (key: string) => boolean, detail: string, since?: number): void {
    this.#held.loseWhere(affects, detail, since);
  }

  /** A connection works again: send the give-backs Redis has not confirmed. */
  retryGiveBacks(): void {
    this.#ctx.giveBacks.retry();
  }

  /** close(): waiters reject, attempts in flight settle, held leases are released. */
  async close(): Promise<void> {
    this.#waiting.close();
    await this.#ctx.grants?.close();
    await this.#held.close();
  }

  /**
   * destroy(): waiters reject and held leases end now; nothing is sent (keys lapse at their TTL),
   * and the calls in flight fail as the drivers cut their sockets.
   */
  destroy(): void {
    this.#waiting.close(true);
    void this.#ctx.grants?.close().catch(() => {});
    this.#held.destroy();
    this.#ctx.giveBacks.drop();
  }

  /** Announces a lease taken outside a wait queue (tryAcquire, force), as the queues do theirs. */
  #announce(lease: Lease): void {
    this.#ctx.emit('acquired', { name: lease.name, fencingToken: lease.fencingToken, waited: 0 });
  }
}
