import { after } from '../base/timer.ts';

/** The outcome of one attempt: the thing acquired, or how long until trying again is worthwhile. */
export type Attempt<T> = { acquired: T } | Retry;

/** A failed attempt: when trying again is worthwhile, and the key that blocked it (multiLock). */
export type Retry = { retryIn: number; blocking?: string };

/** Zero-delay retries in a row before the queue falls back to a 1 ms timer. */
const MAX_QUICK_RETRIES = 8;

/** One caller waiting in a queue. */
export interface Waiter<T> {
  /** Settled already (timed out, aborted or resolved): skip it. */
  settled: boolean;
  /** Make exactly one attempt, then give up (timeout 0). */
  readonly oneShot: boolean;
  resolve(value: T): void;
  /** Busy after its one attempt (oneShot), or a failure to report. */
  giveUp(error?: unknown): void;
}

/**
 * The waiters of one process for one lock name. They share a single in-flight attempt, so a
 * release wakes one round trip here, not a herd. Wake-ups (a push, a local release, the retry
 * timer at the holder's remaining TTL, a reconnect) that arrive while an attempt is in flight
 * mark it dirty, and the queue tries again as soon as that attempt fails: no change is missed
 * between the attempt's read and its reply.
 */
export class WaitQueue<T, W extends Waiter<T> = Waiter<T>> {
  readonly #waiters: W[] = [];
  readonly #attempt: (waiter: W) => Promise<Attempt<T>>;
  readonly #discard: (value: T) => void;
  readonly #onIdle: () => void;
  #inFlight = false;
  #dirty = false;
  /** Cancels the pending retry (a timer or an immediate), if any. */
  #cancelRetry: (() => void) | undefined;
  #quickRetries = 0;

  constructor(options: {
    attempt: (waiter: W) => Promise<Attempt<T>>;
    /** An attempt succeeded for a waiter that had already given up: undo it. */
    discard: (value: T) => void;
    /** The queue has no waiters and nothing in flight: the owner may drop it. */
    onIdle: () => void;
  }) {
    this.#attempt = options.attempt;
    this.#discard = options.discard;
    this.#onIdle = options.onIdle;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  get idle(): boolean {
    return this.#waiters.length === 0 && !this.#inFlight;
  }

  /**
   * Queues `waiter` and attempts now; or, with `retryIn` (the verdict of an attempt the caller
   * just made, with no change pushed since), waits that long or for the next wake-up.
   * `front`: the waiter arrived before everyone queued (its first attempt ran outside the queue).
   */
  add(waiter: W, retryIn?: number, front = false): void {
    if (front) this.#waiters.unshift(waiter);
    else this.#waiters.push(waiter);
    if (retryIn === undefined || this.#inFlight || this.#waiters.length > 1) {
      this.wake();
      return;
    }
    this.#retryAfter(retryIn);
  }

  /** A waiter gave up (timeout, abort): forget it. */
  remove(waiter: W): void {
    const i = this.#waiters.indexOf(waiter);
    if (i >= 0) this.#waiters.splice(i, 1);
    this.#maybeIdle();
  }

  /** Something may have changed: attempt now, or right after the attempt in flight. */
  wake(): void {
    if (this.#inFlight) {
      this.#dirty = true;
      return;
    }
    void this.#run();
  }

  /** Every waiter, for close(). */
  drain(): W[] {
    const all = this.#waiters.splice(0);
    this.#clearTimer();
    return all;
  }

  #clearTimer(): void {
    this.#cancelRetry?.();
    this.#cancelRetry = undefined;
  }

  async #run(): Promise<void> {
    this.#clearTimer();
    const head = this.#waiters[0];
    if (head === undefined) {
      this.#maybeIdle();
      return;
    }
    this.#inFlight = true;
    this.#dirty = false;
    let result: Attempt<T>;
    try {
      result = await this.#attempt(head);
    } catch (error) {
      this.#inFlight = false;
      this.#settle(head);
      head.giveUp(error);
      this.wake();
      return;
    }
    this.#inFlight = false;
    if ('acquired' in result) {
      this.#settle(head);
      if (head.settled) this.#discard(result.acquired);
      else head.resolve(result.acquired);
      // Whoever waits next is woken by the local release or loss of what was just acquired.
      this.#maybeIdle();
      return;
    }
    if (head.oneShot && !head.settled) {
      this.#settle(head);
      head.giveUp();
    }
    if (this.#dirty || (head.settled && this.#waiters.length > 0)) {
      this.wake();
      return;
    }
    if (this.#waiters.length === 0) {
      this.#maybeIdle();
      return;
    }
    this.#retryAfter(result.retryIn);
  }

  /**
   * Retries after `ms`. Zero (a lock whose TTL runs out within the millisecond, a lease that
   * arrived already expired) retries on the next turn of the event loop rather than after
   * setTimeout's 1 ms minimum, a few times in a row at most, so that a hint stuck at zero cannot
   * turn into a busy loop against Redis.
   */
  #retryAfter(ms: number): void {
    if (ms <= 0 && this.#quickRetries < MAX_QUICK_RETRIES) {
      this.#quickRetries++;
      // Not unref'd: an unref'd immediate does not keep the event loop from sleeping in its poll
      // phase, so the retry ran only when something else woke the process (a timer seconds
      // later). A ref'd immediate keeps the process up for one turn, no longer.
      const immediate = setImmediate(() => this.wake());
      this.#cancelRetry = () => clearImmediate(immediate);
      return;
    }
    // A hint stuck at zero keeps using 1 ms timers; a real wait (the lock seen held) starts over.
    if (ms > 1) this.#quickRetries = 0;
    // A hint is a TTL read from Redis, which may exceed setTimeout's 2^31-1 ms. Ref'd: a caller
    // waits on it (on Redis its socket keeps the process up anyway; the memory backend has no
    // socket, and a polling waiter there ended with the process, its acquire never settled).
    this.#cancelRetry = after(Math.max(1, ms), () => this.wake(), { ref: true });
  }

  #settle(waiter: W): void {
    const i = this.#waiters.indexOf(waiter);
    if (i >= 0) this.#waiters.splice(i, 1);
  }

  #maybeIdle(): void {
    if (this.idle) {
      this.#clearTimer();
      this.#onIdle();
    }
  }
}
