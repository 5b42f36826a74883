import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { monotonic } from '../../src/base/clock.ts';
import { Renewer } from '../../src/engine/renewer.ts';
import { Lease } from '../../src/lease.ts';
import { countingCore } from '../harness/lease-core.ts';

test('a push re-verifies a lease at once, also on a clock that reads negative', async (t) => {
  // The fault tests skew a worker's clock an hour back, so performance.now() reads below zero
  // there. "Verify now" must still mean now: 0 used to mean an hour from now on such a clock.
  const realNow = performance.now.bind(performance);
  performance.now = () => realNow() - 3_600_000;
  t.after(() => {
    performance.now = realNow;
  });
  assert.ok(monotonic() < 0, 'the skewed clock reads negative');

  const renewer = new Renewer();
  const core = countingCore();
  const ended: unknown[] = [];
  const lease = new Lease({
    name: 'job',
    stored: 't',
    fencingToken: 1n,
    ttl: 60_000,
    sentAt: monotonic(),
    core,
    host: { finished: (_lease, error) => ended.push(error), giveBack: () => {} },
  });
  renewer.add(lease, core);
  try {
    // Far from its renewal time (ttl / 3 = 20 s): only the push makes it due.
    renewer.verifySoon(lease);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(core.batches, 1, 'verified within 20 ms of the push');
    assert.equal(lease.done, false);
    assert.deepEqual(ended, []);
  } finally {
    renewer.close();
  }
});
