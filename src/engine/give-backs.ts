import { monotonic } from '../base/clock.ts';
import { NotSentError } from '../driver/types.ts';
import { QuorumError, RedisUnavailableError } from '../errors.ts';
import type { LeaseholdEvents } from '../events.ts';

/** One key (or set of keys) to give back: a compare-and-delete Redis has not confirmed yet. */
interface Entry {
  readonly name: string;
  /** Resolves once Redis answered (held or not); rejects when it could not be reached. */
  readonly send: () => Promise<unknown>;
  /** Monotonic time after which the key has surely expired by itself: stop trying. */
  readonly until: number;
}

type Emit = <E extends keyof LeaseholdEvents>(event: E, payload: LeaseholdEvents[E]) => void;

/** Retries back off from the first delay to this, while nothing tells us Redis is back. */
const MAX_RETRY_DELAY = 5_000;

/**
 * Give-backs that could not be confirmed: a release whose reply never came, the key of an
 * acquisition whose outcome is unknown (sent, then the connection was given up), a lease lost to
 * a dropped connection, a waiter's registration. Each is a compare-and-delete on a token that
 * only this process ever had, so sending it again is always safe. They are retried as soon as a
 * connection works again (`retry()`, on every reconnect) and, in case no reconnect is ever seen
 * (a user's own client that recovered by itself), on a timer that backs off to 5 s. Without
 * this a healed network would leave each such name blocked until its TTL ran out.
 */
export class GiveBacks {
  readonly #entries = new Set<Entry>();
  readonly #emit: Emit;
  readonly #firstDelay: number;
  #delay: number;
  #timer: NodeJS.Timeout | undefined;
  #retrying = false;

  constructor(emit: Emit, firstDelay: number) {
    this.#emit = emit;
    this.#firstDelay = Math.max(firstDelay, 50);
    this.#delay = this.#firstDelay;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Gives back now, and queues the give-back when Redis does not confirm it. `track` keeps the
   * first try among the calls close() waits for. Resolves once the first try is over.
   */
  send(
    name: string,
    send: () => Promise<unknown>,
    ttl: number,
    track: <T>(p: Promise<T>) => Promise<T>,
  ): Promise<void> {
    return track(send()).then(
      () => {},
      (error: unknown) => {
        if (retryable(error)) this.add(name, send, ttl);
      },
    );
  }

  /** Queues a give-back of `name` that Redis did not confirm; `ttl` bounds how long it matters. */
  add(name: string, send: () => Promise<unknown>, ttl: number): void {
    // A key outlives its TTL only if the command that set it ran late (a stalled server runs what
    // it had buffered when it wakes up): a minute covers that, and the entry is dropped after.
    this.#entries.add({ name, send, until: monotonic() + ttl + 60_000 });
    this.#emit('pending-releases', { name, pending: this.#entries.size, change: 'queued' });
    this.#schedule();
  }

  /** Sends every pending give-back now (a connection works again). */
  retry(): void {
    this.#delay = this.#firstDelay;
    void this.#round();
  }

  /** close(): one last try for each, within the caller's bound; what fails lapses at its TTL. */
  flush(): Promise<unknown> {
    this.#clearTimer();
    const entries = [...this.#entries];
    this.#entries.clear();
    return Promise.allSettled(entries.map((entry) => entry.send()));
  }

  /** destroy(): nothing more is sent; what is pending lapses at its TTL. */
  drop(): void {
    this.#clearTimer();
    this.#entries.clear();
  }

  async #round(): Promise<void> {
    if (this.#retrying || this.#entries.size === 0) return;
    this.#retrying = true;
    this.#clearTimer();
    const now = monotonic();
    const due = [...this.#entries];
    await Promise.all(due.map((entry) => this.#try(entry, now)));
    this.#retrying = false;
    // A round that waited out its calls (a black-holed network: no reply, no error, until
    // commandTimeout) paced itself: the next goes at once, so that a try is in flight whenever the
    // network heals, instead of the name waiting out a backoff gap after it (PostgreSQL has no
    // reconnect of its command connections to call retry(); docs/safety.md, blackhole-heal).
    // Quick failures (a refused connection, well under retryDelay) back off as before.
    this.#schedule(monotonic() - now >= this.#firstDelay);
  }

  async #try(entry: Entry, now: number): Promise<void> {
    if (now > entry.until) {
      this.#drop(entry, 'expired');
      return;
    }
    try {
      await entry.send();
      this.#drop(entry, 'released');
    } catch (error) {
      // Anything but "Redis did not answer" (a refused command, a closed instance) will not get
      // better by sending it again.
      if (!retryable(error)) this.#drop(entry, 'dropped');
    }
  }

  #drop(entry: Entry, change: 'released' | 'expired' | 'dropped'): void {
    if (!this.#entries.delete(entry)) return;
    this.#emit('pending-releases', { name: entry.name, pending: this.#entries.size, change });
  }

  #schedule(now = false): void {
    if (this.#timer !== undefined || this.#retrying || this.#entries.size === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#round();
      },
      now ? 0 : this.#delay,
    );
    this.#timer.unref();
    if (!now) this.#delay = Math.min(this.#delay * 2, MAX_RETRY_DELAY);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** Redis (or a majority of nodes) did not answer: worth sending again once it does. */
export function retryable(error: unknown): error is RedisUnavailableError | QuorumError {
  return error instanceof RedisUnavailableError || error instanceof QuorumError;
}

/** A runner's per-call release outcomes as one promise: rejects with the first unconfirmed one. */
export async function confirmed(results: Promise<readonly (boolean | Error)[]>): Promise<void> {
  const error = (await results).find((result) => result instanceof Error);
  if (error !== undefined) throw error;
}

/**
 * An acquisition that went out and got no answer (the connection was given up, or dropped before
 * the reply): it may have taken its key all the same. One refused before it was sent did nothing.
 * A quorum's runner gives back on every node by itself, behind the acquisition.
 */
export function unanswered(error: unknown): boolean {
  return error instanceof RedisUnavailableError && !(error.cause instanceof NotSentError);
}
