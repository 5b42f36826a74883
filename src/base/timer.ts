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
  if (ms === Number.POSITIVE_INFINITY) return () => {};
  const deadline = monotonic() + (Number.isNaN(ms) ? 0 : Math.max(ms, 0));
  let timer: NodeJS.Timeout;
  const arm = (first: boolean): void => {
    const left = deadline - monotonic();
    if (left <= SLACK && !first) {
      fn();
      return;
    }
    timer = setTimeout(arm, Math.min(Math.max(left, 0), MAX_TIMER_DELAY), false);
    if (!ref) timer.unref();
  };
  arm(true);
  return () => clearTimeout(timer);
}
