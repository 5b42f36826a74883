/**
 * What the lock-shaped properties share: the option spaces of waiting and one-attempt calls, and
 * the check of a refused call.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { drift } from '../../../src/base/clock.ts';
import { type Lease, LockReleasedError } from '../../../src/index.ts';
import * as space from './space.ts';
import { assertInputError, settle } from './space.ts';
import type { World } from './world.ts';

export const waitOptions = {
  timeout: space.timeout,
  ttl: space.ttl,
  owner: space.owner,
  signal: space.signal,
};
export const onceOptions = { ttl: space.ttl, owner: space.owner };
/** Options a one-attempt call does not take: passing them is an unknown option, not a silent no-op. */
const notForOnce = { timeout: space.timeout, signal: space.signal };

/** Options for a one-attempt call: its own, and sometimes a waiting-only one (which is then bad). */
export const onceOptionsArb = fc.oneof(
  { weight: 3, arbitrary: space.optionsOf(onceOptions) },
  space.optionsOf({ ...onceOptions, ...notForOnce }).map((o) => ({
    ...o,
    bad: [...o.bad, ...Object.keys(o.chosen).filter((k) => k in notForOnce)],
  })),
);

/** Bad input: the documented TypeError, and not a single key written. */
export async function expectRefused(
  world: World,
  o: { bad: string[] },
  what: string,
  call: () => unknown,
): Promise<void> {
  const started = performance.now();
  const before = await world.keys();
  const outcome = await settle(async () => call());
  if (outcome.ok) {
    if (outcome.value !== undefined && typeof (outcome.value as Lease).release === 'function') {
      await (outcome.value as Lease).release();
    }
    assert.fail(`${what}: accepted bad ${o.bad.join(', ')}`);
  }
  assertInputError(outcome.error, o.bad, what);
  const after = (await world.keys()).map(({ key }) => key).sort();
  // A key an earlier case left with a short TTL (a lease lost on arrival keeps its keys until they
  // expire) may expire between the two reads: that is Redis, not the refused call. Any other key
  // that came or went is the call's doing.
  const elapsed = performance.now() - started;
  const expected = before
    .filter(({ key, pttl }) => after.includes(key) || pttl === -1 || pttl > elapsed + 1)
    .map(({ key }) => key)
    .sort();
  assert.deepEqual(after, expected, `${what}: bad input wrote keys`);
}

/**
 * A lease's release() resolved true, or there was nothing left to release: the lease was lost
 * first, or its validity ran out while the release was on its way (the holder is done with it,
 * and its signal says "released"; Redis then found the key expired). With a TTL of 12 ms and a
 * round trip of a millisecond or two on a busy machine, the last one happens.
 */
export async function releasedOrGone(lease: Lease): Promise<boolean> {
  if (await lease.release()) return true;
  if (lease.lost) return true;
  const reason: unknown = lease.signal.reason;
  return reason instanceof LockReleasedError && /validity ran out/.test(reason.message);
}

/**
 * One attempt (tryAcquire and the like): a lease when the name was free, undefined when busy. A
 * free name may also give undefined when the reply came back after the lease's validity had run
 * out (a 12 ms TTL on a loaded machine, 64 keys in one script): the keys go back and the attempt
 * reports not acquired (src/engine/attempts.ts), which only a reply that late may do.
 */
export async function expectTry(
  start: () => Promise<Lease | undefined>,
  busy: boolean,
  ttl: number,
  what: string,
): Promise<Lease | undefined> {
  const sent = performance.now();
  const lease = await start();
  const took = performance.now() - sent;
  if (busy) assert.equal(lease, undefined, `${what}: tryAcquire on a held name`);
  else if (lease === undefined)
    assert.ok(took >= ttl - drift(ttl), `${what}: tryAcquire of a free name gave nothing after ${took} ms`);
  return lease;
}
