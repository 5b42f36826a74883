import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from '../harness/worker.ts';

const FIXTURE = new URL('../harness/fixtures/clock-worker.ts', import.meta.url).pathname;
const SKEW = new URL('../harness/skew-clock.ts', import.meta.url).pathname;

test('skew-clock.ts skews the clocks the library reads, in that worker only', async () => {
  await using worker = await Worker.start(FIXTURE, {
    execArgv: ['--import', SKEW],
    env: { ...process.env, LEASEHOLD_SKEW_RATE: '2', LEASEHOLD_SKEW_OFFSET: '3600000' },
  });
  const m = await worker.next((message) => message['type'] === 'clock', 20_000);
  const real = Number(m['real']);
  assert.ok(real >= 290, `slept ${real} ms`);
  // Twice as fast, within scheduling noise.
  assert.ok(Math.abs(Number(m['monotonic']) - 2 * real) < 0.1 * real, `monotonic moved ${m['monotonic']} ms`);
  assert.ok(Math.abs(Number(m['date']) - 2 * real) < 0.1 * real + 2, `Date.now moved ${m['date']} ms`);
  assert.ok(Math.abs(Number(m['dateOffset']) - 3_600_000) < 5_000, `offset ${m['dateOffset']} ms`);
  assert.ok(
    Math.abs(performance.now() + performance.timeOrigin - Date.now()) < 1_000,
    'the parent is untouched',
  );
});
