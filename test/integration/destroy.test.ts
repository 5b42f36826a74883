// destroy() (issue 41, item 7): an instance ends at once, whatever the server does, where close()
// waits up to commandTimeout for calls in flight and then for the releases. A black hole (every
// byte dropped, the connections left open) is the case close() cannot be quick in.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConnectionClosedError, type Leasehold, LeaseholdError, LockReleasedError } from '../../src/index.ts';
import { Leasehold as LeaseholdClass } from '../../src/leasehold.ts';
import { connect, lockKey, mode, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
/** What close() would wait for against the black hole: destroy() must not come near it. */
const COMMAND_TIMEOUT = 8_000;
/** destroy() does no round trip: this is timers and a loaded machine only. */
const AT_ONCE = 1_500;

/** A holder, a waiter and a call in flight on `lh`, then the network to the server black-holed. */
async function busyThenCutOff(lh: Leasehold, proxy: FaultProxy) {
  const lease = await lh.acquire('job');
  const waiter = lh.acquire('job', { timeout: 60_000 }).then(
    () => undefined,
    (error: unknown) => error,
  );
  proxy.blackhole(true);
  const inFlight = lh.tryAcquire('other').then(
    () => undefined,
    (error: unknown) => error,
  );
  return { lease, waiter, inFlight };
}

/** What destroy() promises, the same on every server. */
async function destroysAtOnce(lh: Leasehold, proxy: FaultProxy): Promise<void> {
  const { lease, waiter, inFlight } = await busyThenCutOff(lh, proxy);
  await within(lh.destroy(), AT_ONCE, 'destroy() against a black hole');
  assert.ok(lease.signal.aborted, "the holder's signal aborted");
  assert.ok(lease.signal.reason instanceof LockReleasedError, String(lease.signal.reason));
  assert.match((lease.signal.reason as Error).message, /destroy\(\)/);
  assert.ok((await within(waiter, AT_ONCE, 'the waiter')) instanceof ConnectionClosedError);
  const error = await within(inFlight, AT_ONCE, 'the call in flight');
  assert.ok(error instanceof LeaseholdError, `the call in flight failed with ${String(error)}`);
  await assert.rejects(lh.acquire('later'), ConnectionClosedError);
  await within(lh.close(), AT_ONCE, 'close() after destroy()');
  await within(lh.destroy(), AT_ONCE, 'destroy() again');
  // GLIDE has no way to cut its core's sockets: close() asks it to, and it does so on its own
  // schedule (docs/compatibility.md); everything above holds all the same.
  if (testDriver !== 'glide')
    await until('every socket of the instance cut', async () => proxy.connections === 0, {
      timeout: AT_ONCE,
    });
}

describe(`destroy() (${mode})`, () => {
  test('against a black-holed Redis: settles at once, rejects waiters and calls, aborts holders, cuts the sockets (except GLIDE), leaves the keys to their TTL', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const prefix = uniquePrefix();
    const lh = await connect(redis.server, { url: proxy.url, prefix, commandTimeout: COMMAND_TIMEOUT });
    await destroysAtOnce(lh, proxy);
    // Not released: nothing was sent. The key lapses at its TTL like a crashed holder's.
    const pttl = Number(await command(redis.server.port, ['PTTL', lockKey(prefix, 'job')]));
    assert.ok(pttl > 0, `the key still lives out its TTL (PTTL ${pttl})`);
  });

  test('ends a close() that is waiting on a black-holed Redis', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const lh = await connect(redis.server, { url: proxy.url, commandTimeout: COMMAND_TIMEOUT });
    const { lease } = await busyThenCutOff(lh, proxy);
    const closing = lh.close();
    await within(lh.destroy(), AT_ONCE, 'destroy() during close()');
    await within(closing, AT_ONCE, 'the close() it ended');
    assert.ok(lease.signal.aborted);
  });
});

// PostgreSQL uses no Redis client: it runs in the first client's run only (as the other
// PostgreSQL files do, scripts/test.mjs ONCE).
describe('destroy() (postgres)', {
  skip: testDriver !== 'node-redis' && 'PostgreSQL runs in the node-redis run only',
}, () => {
  let db: PgDatabase;
  before(async () => {
    db = await PgDatabase.create();
  });
  after(async () => {
    await db.drop();
  });

  test('against a black-holed PostgreSQL: the same, the pool and the LISTEN connection cut', async () => {
    await using proxy = await FaultProxy.start(5432);
    const url = new URL(db.url);
    url.port = String(proxy.port);
    const lh = await LeaseholdClass.connect({
      postgres: url.toString(),
      prefix: uniquePrefix('pgd'),
      commandTimeout: COMMAND_TIMEOUT,
    });
    await destroysAtOnce(lh, proxy);
  });
});
