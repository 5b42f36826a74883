/**
 * The fault suite's one clock: milliseconds on the host's CLOCK_MONOTONIC (`process.hrtime.bigint()`
 * is libuv's uv_hrtime, i.e. clock_gettime(CLOCK_MONOTONIC)). Every process on the machine reads
 * the same clock, so times reported by different workers compare directly. The earlier
 * `performance.timeOrigin + performance.now()` paired a monotonic and a wall-clock reading once per
 * process, giving each worker its own constant, unmeasured offset. A skewed clock
 * (test/harness/skew-clock.ts) patches `performance.now` and `Date.now`, never this.
 *
 * Node only: Bun's `process.hrtime` counts from its own process start (measured with Bun 1.4.5:
 * a few ms in a fresh process, 3-9 ms; scripts/bun-check.sh prints it), so timestamps from two Bun processes do not compare. A checker
 * that compared them would report overlaps the lock never had.
 */
if ((process.versions as Record<string, string | undefined>)['bun'] !== undefined) {
  throw new Error(
    'the fault suite needs Node: under Bun, process.hrtime is not a clock shared between processes',
  );
}

export const hostNow = (): number => Number(process.hrtime.bigint()) / 1e6;
