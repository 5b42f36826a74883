// Issue 40, item 5, as the reproduction had it: a replica SIGKILLed in the middle of an
// idempotent charge. Before lh.idempotent, the next caller got the lock after the TTL and charged
// again; now it gets OutcomeUnknownError, saying when the run started, who ran it and its fencing
// token, and runs it again only when it opts in (retryUnknown).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { OutcomeUnknownError } from '../../src/index.ts';
import { mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { Worker } from '../harness/worker.ts';

const redis = useRedis();
const WORKER = new URL('./workers/idempotent-worker.ts', import.meta.url).pathname;
const TTL = 1_000;

test(`a replica SIGKILLed mid-run: the next caller gets OutcomeUnknownError, not a second charge (${mode})`, async () => {
  const prefix = uniquePrefix('idem-crash');
  const replica = await Worker.start(WORKER, { args: [redis.server.url, prefix, String(TTL), 'charge:42'] });
  const lh = await redis.instance(prefix, TTL, { owner: 'replica-2' });
  try {
    await replica.next((m) => m['type'] === 'ready', 10_000);
    const before = Date.now();
    replica.send({ type: 'charge' });
    const charging = await replica.next((m) => m['type'] === 'charging', 5_000);
    await replica.kill('SIGKILL');
    let charges = 0;
    const charge = async () => {
      charges += 1;
      return { receipt: 'r-2' };
    };
    const outcome = await lh
      .idempotent('charge:42', charge, { timeout: 5 * TTL })
      .catch((error: unknown) => error);
    assert.ok(outcome instanceof OutcomeUnknownError, `an unknown outcome, not ${inspect(outcome)}`);
    assert.equal(charges, 0, 'the charge did not run again');
    assert.equal(outcome.code, 'LEASEHOLD_ERR_OUTCOME_UNKNOWN');
    assert.equal(outcome.key, 'charge:42');
    assert.equal(outcome.owner, 'replica-1');
    assert.equal(outcome.fencingToken, BigInt(String(charging['fencingToken'])));
    // The server's clock: within a second of this process's around the start.
    assert.ok(
      Math.abs(outcome.startedAt - before) < 1_000,
      `started at ${outcome.startedAt}, asked at ${before}`,
    );
    // Opting in runs it again, once, and later callers get that result.
    assert.deepEqual(await lh.idempotent('charge:42', charge, { retryUnknown: true }), { receipt: 'r-2' });
    assert.deepEqual(await lh.idempotent('charge:42', charge), { receipt: 'r-2' });
    assert.equal(charges, 1);
  } finally {
    await replica.stop();
  }
});
