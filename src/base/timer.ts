/**
 * A timer for any delay. Node's setTimeout honours at most 2^31-1 ms (about 24.8 days): a longer
 * delay (or Infinity) fires after 1 ms instead, with a TimeoutOverflowWarning, and a negative or
 * NaN one warns too. Every delay that a caller's option or a Redis reply can make that long (an
 * acquire's `timeout`, a TTL read back from Redis, the CLI's `--grace`) goes through `after()`,
 * which chains timers of at most that length until the whole delay has passed.
 */
import { monotonic } from './clock.ts';

/** The longest delay one setTimeout honours. */
export const MAX_TIMER_DELAY = 2 ** 31 - 1;

/** How early a link may fire and still count as on time: setTimeout's own granularity. */
const SLACK = 1;

/**
 * Calls `fn` once, `ms` milliseconds from now: Infinity never, below 0 or NaN on the next timer
 * turn. At most a millisecond early on the monotonic clock, as setTimeout is in a quiet process
 * (libuv counts whole milliseconds): Node measures a timer from the event loop's cached time,
 * which a long synchronous stretch leaves behind, so a plain setTimeout can fire that much before
 * its delay has passed; a link that fires earlier is followed by one for the rest. Returns the
 * function that cancels it. Unref'd unless `ref`: most of leasehold's timers must not keep a
 * process alive on their own.
 *
 * @example
 * const cancel = after(timeout, () => reject(new LockTimeoutError(name, timeout)), { ref: true });
 */
export function after(ms: number, fn: () => void, { ref = false }: { ref?: boolean } = {}): () => void {
  if (ms === Number.POSITIVE_INFINITY) return NEVER;
  const delay = new Delay(monotonic() + (Number.isNaN(ms) ? 0 : Math.max(ms, 0)), fn, ref);
  delay.arm(true);
  return delay.cancel;
}

/** What after() returns for a delay that never ends: one shared function. */
const NEVER = (): void => {};

/**
 * One pending after(). A class with a shared callback (setTimeout passes the Delay to it) rather
 * than closures: every waiter keeps one for its retry, and closures with their scopes are
 * larger (bench "heap per waiter", docs/benchmarks.md).
 */
class Delay {
  readonly cancel: () => void;
  readonly #deadline: number;
  readonly #fn: () => void;
  readonly #ref: boolean;
  #timer: NodeJS.Timeout | undefined;

  constructor(deadline: number, fn: () => void, ref: boolean) {
    this.#deadline = deadline;
    this.#fn = fn;
    this.#ref = ref;
    this.cancel = cancelDelay.bind(undefined, this);
  }

  /** Fires when the deadline is (about) reached, else sets the next link; the first never fires. */
  arm(first: boolean): void {
    const left = this.#deadline - monotonic();
    if (left <= SLACK && !first) {
      this.#fn();
      return;
    }
    this.#timer = setTimeout(fireDelay, Math.min(Math.max(left, 0), MAX_TIMER_DELAY), this);
    if (!this.#ref) this.#timer.unref();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

function fireDelay(delay: Delay): void {
  delay.arm(false);
}

function cancelDelay(delay: Delay): void {
  delay.clear();
}
