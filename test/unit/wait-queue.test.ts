import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';

const FIXTURE = new URL('../harness/fixtures/quick-retry.ts', import.meta.url).pathname;

// The fixture runs in a process of its own under Node's type stripping, not tsx: tsx's loader
// keeps waking the event loop, which hides a retry that does not wake it by itself.
const stripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);

// A lock whose TTL runs out within the millisecond makes an attempt answer "retry in 0 ms"; the
// queue then retries on the next turn of the event loop. That turn must come by itself: an
// unref'd setImmediate does not keep the event loop from sleeping in its poll phase, so the retry
// waited for whatever woke the process next, and in a process with nothing else to do it never
// ran. A fair-lock waiter on the memory backend waited 1.5 s (a CI rehearsal) and 3 s (1 run in
// 28) for a holder whose TTL had run out.
test('a zero-delay retry runs on the next turn, not at the next unrelated event', {
  skip: stripsTypes ? false : 'needs Node >= 22.6 type stripping to run the fixture without tsx',
}, async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [FIXTURE], { timeout: 10_000 });
  const { value, attempts, ms } = JSON.parse(stdout) as { value: string; attempts: number; ms: number };
  assert.equal(value, 'lease');
  assert.equal(attempts, 3);
  assert.ok(ms < 1_000, `three attempts took ${Math.round(ms)} ms (the process's only timer is 3 s)`);
});
