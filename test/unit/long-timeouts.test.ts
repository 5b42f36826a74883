// Issue 28, as the new user met it: `lh.readWriteLock('cfg').write({ timeout: 2_147_483_647_000 })`
// while another instance held the lock rejected with LockTimeoutError after 1-2 ms, and Node
// printed a TimeoutOverflowWarning: setTimeout fires at once above 2^31-1 ms. The same held for
// every delay a caller or Redis can make that long. Each test fails on the code before the fix.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold, LockTimeoutError, MemoryBackend } from '../../src/index.ts';

const MAX_TTL = 2 ** 31 - 1;
let warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(async () => {
  // Node emits timer warnings on the next tick.
  await new Promise((resolve) => setImmediate(resolve));
  process.off('warning', onWarning);
  assert.deepEqual(warnings, [], 'Node warned');
});

async function pair(): Promise<[Leasehold, Leasehold]> {
  const backend = new MemoryBackend();
  return [await Leasehold.connect({ backend }), await Leasehold.connect({ backend })];
}

test('issue 28: write({ timeout: 2_147_483_647_000 }) waits while another instance holds the lock', async () => {
  const [a, b] = await pair();
  try {
    const held = await a.readWriteLock('cfg').write();
    const stop = new AbortController();
    const waiting = b.readWriteLock('cfg').write({ timeout: 2_147_483_647_000, signal: stop.signal });
    const early = await Promise.race([
      waiting.then(
        () => 'acquired',
        (e: Error) => e.name,
      ),
      sleep(50),
    ]);
    assert.equal(early, undefined, `the wait ended after less than 50 ms: ${early}`);
    await held.release();
    const lease = await waiting;
    assert.equal(lease.lost, false);
    await lease.release();
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('timeouts beyond 2^31-1 ms still wait (25 ms in), short ones still time out', async () => {
  const [a, b] = await pair();
  try {
    await a.acquire('job');
    for (const timeout of [MAX_TTL + 1, 2 ** 53, 1e300]) {
      const stop = new AbortController();
      const waiting = b.acquire('job', { timeout, signal: stop.signal });
      const early = await Promise.race([waiting.catch((e: Error) => e), sleep(25)]);
      assert.equal(early, undefined, `timeout ${timeout} ended early: ${String(early)}`);
      stop.abort(new Error('stop'));
      await assert.rejects(waiting, /stop/);
    }
    // Short ones still time out.
    await assert.rejects(b.acquire('job', { timeout: 5 }), LockTimeoutError);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('connectTimeout: Infinity (accepted as documented) connects; it used to fail at once with ConnectError', async () => {
  const lh = await Leasehold.connect({
    backend: new MemoryBackend(),
    connectTimeout: Number.POSITIVE_INFINITY,
  });
  await lh.close();
});

test('the memory backend keeps a key whose TTL is beyond 2^31-1 ms (a PEXPIRE may set one)', async () => {
  const backend = new MemoryBackend();
  backend.set('long', 'v', { px: 2 ** 32 });
  // Before the fix its expiry timer fired every millisecond, each time with a warning.
  await sleep(20);
  assert.equal(backend.get('long'), 'v');
  assert.ok(backend.pttl('long') > MAX_TTL);
  backend.flush();
});

test('election.observe() of a leader whose PTTL is 2^31-1 ms sleeps until its expiry without a warning', async (t) => {
  // A frozen monotonic clock: the leader's PTTL reads exactly its ttl, and observe() sleeps
  // PTTL + 1 = 2^31 ms, one more than setTimeout takes.
  const realNow = performance.now.bind(performance);
  const frozen = realNow();
  performance.now = () => frozen;
  t.after(() => {
    performance.now = realNow;
  });
  const [a] = await pair();
  try {
    const election = a.election('e');
    const term = await election.campaign('x', { ttl: MAX_TTL });
    const stop = new AbortController();
    const changes = election.observe({ signal: stop.signal });
    assert.equal((await changes.next()).value?.type, 'elected');
    const next = changes.next();
    await sleep(20);
    performance.now = realNow;
    stop.abort(new Error('stop'));
    await assert.rejects(next, /stop/);
    await term.resign();
  } finally {
    performance.now = realNow;
    await a.close();
  }
});

test('a waiter behind a key whose PTTL is beyond 2^31-1 ms waits for a change instead of retrying every millisecond', async () => {
  const backend = new MemoryBackend();
  const lh = await Leasehold.connect({ backend, prefix: 'p' });
  try {
    // Held by something else (another tool, a PEXPIRE by hand): the attempt's hint is that PTTL.
    backend.set('p:{job}', 'someone-else', { px: 2 ** 32 });
    const stop = new AbortController();
    const waiting = lh.acquire('job', { signal: stop.signal });
    await sleep(20);
    backend.del('p:{job}');
    const lease = await waiting;
    await lease.release();
  } finally {
    await lh.close();
  }
});
