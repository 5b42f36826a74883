// The engine's watch on the wall clock against the monotonic one, so that a run names the clock as
// the cause of an overlap when it was (watchWallClock says how).
import { hostNow } from '../harness/host-clock.ts';

/** A wall-clock movement worth a note: beyond this, it eats into the drift allowance. */
export const WALL_CLOCK_NOTE_MS = 3;

/**
 * Samples the wall clock against the monotonic one every 10 ms. Redis expires keys by the wall
 * clock; leases and the checker count by the monotonic clock. A step or fast slew of the wall
 * clock (an NTP correction, a VM resynchronising after a stall) expires keys early in monotonic
 * terms, and an overlap shorter than the step is then the clock's doing, not the lock's: the run
 * says so instead of leaving it to guesswork. `stop()` returns the largest movement seen, in ms.
 */
export function watchWallClock(): { stop(): number } {
  const base = Date.now() - hostNow();
  let min = 0;
  let max = 0;
  const timer = setInterval(() => {
    const offset = Date.now() - hostNow() - base;
    min = Math.min(min, offset);
    max = Math.max(max, offset);
  }, 10);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      return max - min;
    },
  };
}
