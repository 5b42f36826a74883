import { monotonic } from '../base/clock.ts';
import { after } from '../base/timer.ts';
import { ConnectionClosedError, QuorumError, RedisUnavailableError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import type { Context } from './context.ts';
import type { WaitSpec } from './spec.ts';
import { type Attempt, type Retry, WaitQueue } from './wait-queue.ts';
import type { Waiter } from './waiter.ts';

/** How a wait begins whose first attempt went out before it (Engine.acquire). */
export interface First {
  startedAt: number;
  verdict: Retry;
  quiet: boolean;
}

/**
 * Every local wait queue of an instance (one WaitQueue per key: wait-queue.ts), the one wait loop of every primitive driven by pushes, local wakes
 * and retry timers; a caller's first attempt, when nobody here waits for its key, goes out before
 * its wait exists (Engine.acquire: firstOut, firstBack, wait's `first`). Mutex waiters of one name
 * share a queue and its single attempt in flight; a fair-lock waiter or a waiting writer, whose
 * stored value is its registration, waits in a queue of its own.
 */
export class Queues {
  readonly #ctx: Context;
  readonly #queues = new Map<string, { queue: WaitQueue<Lease, Waiter>; unwatch: () => void }>();
  /** Per queue with WaitSpec.wakeOnBlocking: the key its last attempt found busy. */
  readonly #blocking = new Map<string, string>();
  /** Local wakes so far (see wakes). */
  #wakes = 0;
  /** Keys with a first attempt out (firstOut). */
  readonly #firsts = new Set<string>();
  /** Other local things to wake by key (election observers). */
  readonly #wakers = new Map<string, Set<() => void>>();
  /** Called by close(): waiters outside the wait queues (observers) end themselves. */
  readonly #closers = new Set<() => void>();

  constructor(ctx: Context) {
    this.#ctx = ctx;
  }

  /**
   * Callers waiting, not queues: a queue outlives its last waiter until the attempt in flight
   * returns, and a caller whose timeout already fired is not waiting any more.
   */
  get waiting(): number {
    let waiting = this.#closers.size;
    for (const { queue } of this.#queues.values()) waiting += queue.waiting;
    return waiting;
  }

  /**
   * Waits in the waiter's local queue (Waiter.queue) until an attempt succeeds. The queue retries
   * on a push for any of its `watch` keys, on a local wake of its key, and at the retry time each
   * failed attempt returns. `shared`: a success may leave room for the next waiter (readers,
   * permits). The waiter ends (Waiter.end: its one withdraw) however the wait ends: a lease,
   * timeout, abort, close or error. `first`: the caller's first attempt went out before the wait
   * (Engine.acquire) at `startedAt`, with `verdict`; `quiet` when nothing changed meanwhile, so the
   * queue waits as the verdict says rather than attempting again at once.
   */
  wait(waiter: Waiter, options: ValidAcquireOptions, first?: First): Promise<Lease> {
    const { name, queue } = waiter;
    const queueKey = queue.key;
    const { signal, timeout } = options;
    const early = this.#ctx.closed
      ? new ConnectionClosedError()
      : signal?.aborted
        ? signal.reason
        : undefined;
    if (early !== undefined) {
      // A first attempt may have left it listening for a grant: its one end stops that.
      waiter.end(false);
      return Promise.reject(early);
    }
    const startedAt = first?.startedAt ?? monotonic();
    return new Promise<Lease>((resolve, reject) => {
      let cancelTimer: (() => void) | undefined;
      let endWarmth: (() => void) | undefined;
      // Made only where needed (a signal, lowLatency): an uncontended acquire pays for neither.
      const onAbort = signal === undefined ? undefined : () => finish(undefined, signal.reason);
      const finish = (lease: Lease | undefined, error: unknown) => {
        if (waiter.settled) return;
        waiter.settled = true;
        cancelTimer?.();
        endWarmth?.();
        if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
        this.#queues.get(queueKey)?.queue.remove(waiter);
        waiter.end(lease !== undefined);
        if (lease === undefined) {
          reject(error);
          return;
        }
        // Shared leases (readers, permits): the next local waiter may get in too, so try it now.
        if (queue.shared) this.#queues.get(queueKey)?.queue.wake();
        this.#ctx.emit('acquired', {
          name,
          fencingToken: lease.fencingToken,
          waited: monotonic() - startedAt,
        });
        resolve(lease);
      };
      const warmth = this.#ctx.warmth;
      waiter.bind(
        finish,
        warmth === undefined
          ? undefined
          : () => {
              endWarmth ??= warmth.begin();
            },
      );
      // after(): a timeout beyond setTimeout's 2^31-1 ms still waits that long (issue 28); what
      // a first attempt took counts.
      if (timeout > 0)
        cancelTimer = after(timeout - (monotonic() - startedAt), () => waiter.giveUp(), { ref: true });
      if (onAbort !== undefined) signal?.addEventListener('abort', onAbort, { once: true });
      waiter.queued();
      if (first === undefined) {
        this.#queueFor(queue).add(waiter);
        return;
      }
      const { verdict } = first;
      if (verdict.blocking !== undefined) this.#blocking.set(queueKey, verdict.blocking);
      // Whoever queued during its first attempt arrived after it: it goes first.
      this.#queueFor(queue).add(waiter, first.quiet ? verdict.retryIn : undefined, true);
    });
  }

  /**
   * A first attempt for `key` goes out outside any queue (Engine.acquire), unless this process
   * already waits for it (a queue, or another first attempt out): false then, and the caller
   * queues behind them.
   */
  firstOut(key: string): boolean {
    if (this.#queues.has(key) || this.#firsts.has(key)) return false;
    this.#firsts.add(key);
    return true;
  }

  /** That first attempt settled: the queue of the callers who arrived meanwhile, if any. */
  firstBack(key: string): WaitQueue<Lease, Waiter> | undefined {
    this.#firsts.delete(key);
    return this.#queues.get(key)?.queue;
  }

  /** Local wakes so far: one during a first attempt makes its verdict stale. */
  get wakes(): number {
    return this.#wakes;
  }

  /** One attempt of `waiter`, with Redis or a quorum unreachable turned into a retry later. */
  #attemptOf(waiter: Waiter): Promise<Attempt<Lease>> {
    return waiter.attempt().then(
      (result) => {
        waiter.lastError = undefined;
        if ('blocking' in result && result.blocking !== undefined) {
          this.#blocking.set(waiter.queueKey, result.blocking);
        }
        return result;
      },
      (error: unknown) => {
        // Unreachable: try again after a pause, or at once when the connection comes back.
        if (error instanceof RedisUnavailableError || error instanceof QuorumError) {
          waiter.lastError = error;
          return { retryIn: this.#ctx.retryDelay };
        }
        throw error;
      },
    );
  }

  /** Wakes the local queue and wakers of `key` (this process's own writes bring no push: NOLOOP). */
  wake(key: string): void {
    this.#wakes += 1;
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

  /**
   * close(): every waiter rejects with ConnectionClosedError. A first attempt out (Engine.acquire)
   * settles as its call does: within commandTimeout, at once when destroy() cuts the sockets.
   */
  close(): void {
    this.#ctx.warmth?.stop();
    for (const { queue, unwatch } of this.#queues.values()) {
      for (const waiter of queue.drain()) waiter.giveUp(new ConnectionClosedError());
      unwatch();
    }
    this.#queues.clear();
    for (const closer of [...this.#closers]) closer();
    this.#closers.clear();
  }

  #queueFor({ key, watch, wakeOn = [], wakeOnBlocking = false }: WaitSpec): WaitQueue<Lease, Waiter> {
    const existing = this.#queues.get(key);
    if (existing !== undefined) return existing.queue;
    const queue = new WaitQueue<Lease, Waiter>({
      attempt: (waiter) => this.#attemptOf(waiter),
      discard: (lease) => void lease.release().catch(() => {}),
      onIdle: () => {
        const entry = this.#queues.get(key);
        if (entry?.queue !== queue) return;
        entry.unwatch();
        this.#queues.delete(key);
        this.#blocking.delete(key);
      },
    });
    const unwatchers = watch.map((k) => this.#ctx.dispatcher.watch(k, { onChange: () => queue.wake() }));
    for (const k of wakeOn) {
      unwatchers.push(
        this.onWake(k, () => {
          const blocking = wakeOnBlocking ? this.#blocking.get(key) : undefined;
          if (blocking === undefined || blocking === k) queue.wake();
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
}
