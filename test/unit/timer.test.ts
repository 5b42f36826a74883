// after(): a timer for any delay. setTimeout fires a delay above 2^31-1 ms after 1 ms, with a
// TimeoutOverflowWarning (issue 28: `write({ timeout: 2_147_483_647_000 })` timed out at once).
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { mock, test } from 'node:test';
import fc from 'fast-check';
import { after, MAX_TIMER_DELAY } from '../../src/base/timer.ts';

/** Mocked setTimeout, and a monotonic clock (performance.now) that follows the mocked time. */
function mockTime(): () => void {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const realNow = performance.now;
  performance.now = () => Date.now();
  return () => {
    performance.now = realNow;
    mock.timers.reset();
  };
}

/** Moves the mocked clock on by `ms`, a link at a time (a tick runs the timers due by its end). */
function advance(ms: number): void {
  for (let left = ms; left > 0; left -= MAX_TIMER_DELAY) mock.timers.tick(Math.min(left, MAX_TIMER_DELAY));
}

test('after() fires once the whole delay has passed, also beyond 2^31-1 ms, never before', () => {
  const restore = mockTime();
  try {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 2, max: 10 }),
          fc.integer({ min: MAX_TIMER_DELAY - 2, max: MAX_TIMER_DELAY + 2 }),
          fc.integer({ min: MAX_TIMER_DELAY, max: 5 * MAX_TIMER_DELAY }),
        ),
        (ms) => {
          let fired = 0;
          after(ms, () => fired++);
          // More than a millisecond short of the delay: not yet, however the chain splits it.
          advance(ms - 2);
          assert.equal(fired, 0, `fired before ${ms} ms`);
          advance(2);
          assert.equal(fired, 1, `not fired at ${ms} ms`);
          advance(10 * MAX_TIMER_DELAY);
          assert.equal(fired, 1, 'fired more than once');
        },
      ),
      { numRuns: 200 },
    );
  } finally {
    restore();
  }
});

test('after() cancels at any link of the chain; Infinity never fires', () => {
  const restore = mockTime();
  try {
    let fired = 0;
    const cancel = after(3 * MAX_TIMER_DELAY, () => fired++);
    advance(MAX_TIMER_DELAY + 5);
    cancel();
    advance(10 * MAX_TIMER_DELAY);
    assert.equal(fired, 0);
    after(Number.POSITIVE_INFINITY, () => fired++)();
    after(Number.POSITIVE_INFINITY, () => fired++);
    advance(100 * MAX_TIMER_DELAY);
    assert.equal(fired, 0);
  } finally {
    restore();
  }
});

test('after() on real timers: no Node warning for any delay, and an unref that lets the process exit', async () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    const cancels = [2 ** 31, 2 ** 53, 1e300, Number.POSITIVE_INFINITY, -1, Number.NaN].map((ms) =>
      after(ms, () => {}),
    );
    let fired = false;
    after(2 ** 31 + 1, () => {
      fired = true;
    });
    // Node emits its timer warnings on the next tick: give them time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Node's timer warnings (TimeoutOverflowWarning, TimeoutNegativeWarning, TimeoutNaNWarning).
    // Node 22 also warns here that MockTimers, used by the tests above, is experimental.
    assert.deepEqual(
      warnings.filter((w) => w.name.startsWith('Timeout')).map((w) => `${w.name}: ${w.message}`),
      [],
    );
    assert.equal(fired, false, 'a delay above 2^31-1 ms fired at once');
    for (const cancel of cancels) cancel();
  } finally {
    process.off('warning', onWarning);
  }
});

test("after() is never more than a millisecond early, also when the event loop's clock lags", () => {
  // Node measures a timer from the loop's cached time: after a long synchronous stretch, a plain
  // setTimeout(fn, 25) fired 1.5 ms before 25 ms had passed (seen in the input properties).
  const restore = mockTime();
  try {
    let fired = 0;
    const realNow = performance.now;
    let lag = 10;
    performance.now = () => Date.now() + lag; // the caller runs 10 ms past the loop's cached time
    after(25, () => fired++);
    lag = 0;
    advance(25 + 10 - 2);
    assert.equal(fired, 0, 'fired more than a millisecond before the delay');
    advance(2);
    assert.equal(fired, 1);
    performance.now = realNow;
  } finally {
    restore();
  }
});
