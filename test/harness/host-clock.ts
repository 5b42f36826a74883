/**
 * The fault suite's one clock: milliseconds on the host's CLOCK_MONOTONIC (`process.hrtime.bigint()`
 * is libuv's uv_hrtime, i.e. clock_gettime(CLOCK_MONOTONIC)). Every process on the machine reads
 * the same clock, so times reported by different workers compare directly. The earlier
 * `performance.timeOrigin + performance.now()` paired a monotonic and a wall-clock reading once per
 * process, giving each worker its own constant, unmeasured offset. A skewed clock
 * (test/harness/skew-clock.ts) patches `performance.now` and `Date.now`, never this.
 */
export const hostNow = (): number => Number(process.hrtime.bigint()) / 1e6;
