import { monotonic } from '../base/clock.ts';
import { parseStamp } from '../base/owner.ts';
import type { ScriptCall } from '../driver/types.ts';
import {
  ConnectionClosedError,
  type LeaseholdError,
  LockTimeoutError,
  QuorumError,
  RedisUnavailableError,
} from '../errors.ts';
import type { Lease } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import type { Grant } from '../runners/runner.ts';
import { Attempts, type LeaseMode, type Routed } from './attempts.ts';
import { Bound } from './bound.ts';
import type { Context } from './context.ts';
import { type FollowSource, follow } from './follow.ts';
import { HeldLeases } from './held-leases.ts';
import { Queues } from './queues.ts';
import type { Spec } from './spec.ts';
import { SpecOp } from './spec-core.ts';
import { traceAcquire } from './tracing.ts';
import type { Attempt } from './wait-queue.ts';
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

  /**
   * Waits for `spec`'s lease on `name` (see Queues.wait for timeout, signal and close). The
   * uncontended fast path: while nobody in this process waits for the name, one attempt goes out
   * before any wait exists (a Waiter, its local queue and watches, grant listening), none of which
   * an uncontended acquire needs. A busy lock makes them and hands them the attempt's verdict, so
   * a contended acquire pays no extra round trip for it.
   */
  acquire<K, R>(spec: Spec<K, R>, name: string, request: R, options: ValidAcquireOptions): Promise<Lease> {
    return traceAcquire(spec, name, () => this.#acquire(spec, name, request, options));
  }

  async #acquire<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: ValidAcquireOptions,
  ): Promise<Lease> {
    const ctx = this.#ctx;
    if (ctx.closed) throw new ConnectionClosedError();
    const { signal, timeout, ttl } = options;
    if (signal?.aborted) throw signal.reason;
    // Direct grants where the spec has them and the instance can subscribe, for a caller that waits.
    const grants = spec.grants !== undefined && timeout !== 0 ? ctx.grants : undefined;
    const attempts = this.#attempts;
    const waiting = this.#waiting;
    const keys = spec.keys(ctx.prefix, name, request);
    const stored = attempts.stamp(options.owner);
    const queueKey = spec.waiting(keys, request, stored).key;
    const how = spec.acquire(keys, stored, ttl, request, false);
    // Without grants, a spec that keeps its waiters in Redis joins them from its first attempt.
    const joins = timeout !== 0 && grants === undefined && (spec.registers ?? spec.records) !== undefined;
    // Behind another caller of this process (queued, or its first attempt out): wait in line.
    if (joins || !waiting.firstOut(queueKey))
      return waiting.wait(this.#waiter(spec, name, request, options), options);
    const startedAt = monotonic();
    const pushes = ctx.dispatcher.pushes;
    const wakes = waiting.wakes;
    const sending = attempts.send(spec, name, request, ttl, stored, how, undefined, keys);
    const bound =
      timeout === Number.POSITIVE_INFINITY && signal === undefined
        ? undefined
        : new Bound(name, timeout, signal);
    let verdict: Attempt<Lease>;
    let busy = false;
    let lastError: LeaseholdError | undefined;
    try {
      const { grant, sentAt, gaveBack } = await (bound === undefined ? sending : bound.race(sending));
      busy = !('fence' in grant);
      verdict =
        'fence' in grant
          ? attempts.granted(spec, name, request, stored, grant, ttl, sentAt, options)
          : attempts.busy(spec, grant, ttl, gaveBack);
    } catch (error) {
      if (bound?.ended) {
        // The caller is gone; the attempt settles later: a lease it got goes back at once.
        void sending.then(
          ({ grant, sentAt }) => {
            waiting.firstBack(queueKey)?.wake();
            if (!('fence' in grant)) return;
            try {
              const late = attempts.granted(spec, name, request, stored, grant, ttl, sentAt, options);
              if ('acquired' in late) void late.acquired.release().catch(() => {});
            } catch {
              // Closed meanwhile: HeldLeases.hold gave the key back.
            }
          },
          () => waiting.firstBack(queueKey)?.wake(),
        );
        throw error;
      }
      // Redis or a quorum unreachable: try again after a pause, or at once when it comes back.
      if (!(error instanceof RedisUnavailableError || error instanceof QuorumError)) {
        waiting.firstBack(queueKey)?.wake();
        throw error;
      }
      verdict = { retryIn: ctx.retryDelay };
      lastError = error;
    }
    const queued = waiting.firstBack(queueKey);
    if ('acquired' in verdict) {
      // Waiters that queued behind this attempt try now (a shared lease may leave room).
      queued?.wake();
      ctx.emit('acquired', {
        name,
        fencingToken: verdict.acquired.fencingToken,
        waited: monotonic() - startedAt,
      });
      return verdict.acquired;
    }
    if (ctx.closed) throw new ConnectionClosedError();
    if (timeout === 0) {
      queued?.wake();
      throw lastError instanceof QuorumError ? lastError : new LockTimeoutError(name, 0, lastError);
    }
    // A push, or a local wake (a lease of this process ended: its own writes bring no push),
    // that came while the attempt was out may have freed the lock after the attempt read it.
    const quiet = queued === undefined && ctx.dispatcher.pushes === pushes && waiting.wakes === wakes;
    // Its stored value says when the caller asked: when the fast path's attempt went out.
    const waiter = this.#waiter(spec, name, request, options, parseStamp(stored).since);
    waiter.lastError = lastError;
    return waiting.wait(waiter, options, { startedAt, verdict: waiter.firstWas(verdict, busy), quiet });
  }

  /**
   * The wait of a caller (a stored value of its own: the fast path's may be owed a give-back),
   * stamped with the time the caller asked (`askedAt`, epoch ms: now).
   */
  #waiter<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: ValidAcquireOptions,
    askedAt?: number,
  ): Waiter {
    const grants = spec.grants !== undefined && options.timeout !== 0 ? this.#ctx.grants : undefined;
    return new Waiter(this.#attempts, spec, name, request, options, grants, this.#wake, askedAt) as Waiter;
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
    this.#waiting.close();
    void this.#ctx.grants?.close().catch(() => {});
    this.#held.destroy();
    this.#ctx.giveBacks.drop();
  }

  /** Announces a lease taken outside a wait queue (tryAcquire, force), as the queues do theirs. */
  #announce(lease: Lease): void {
    this.#ctx.emit('acquired', { name: lease.name, fencingToken: lease.fencingToken, waited: 0 });
  }
}
