/**
 * What a valid call must do, as the docs describe it: a wait that ends as its `timeout` and
 * `signal` say (and never early: a timeout beyond 2^31-1 ms still waits), and a lease that holds
 * what was asked for (name, ttl, owner), as Redis shows it.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lease, LockLostError, LockTimeoutError, type Primitive } from '../../../src/index.ts';
import { LONG_TIMEOUT, SHORT_TIMEOUT, settle } from './space.ts';
import type { World } from './world.ts';

/** How long a long wait must still be waiting when the test looks. */
const PROBE_MS = 20;

export interface WaitCase {
  what: string;
  /** Starts the call under test. */
  start: () => Promise<Lease>;
  /** Whether something else holds what the call asks for. */
  busy: boolean;
  /** The valid `timeout` given, or undefined (Infinity). */
  timeout: number | undefined;
  /** The call's signal's controller, when a signal was given. */
  controller: AbortController | undefined;
  /** Ends what makes the call wait (the other holder releases). */
  free: () => Promise<void>;
}

/**
 * Runs a waiting call and checks how it ends: at once with `signal.reason` when the signal was
 * aborted before the call; with the lease when nothing is in the way; with LockTimeoutError after
 * a timeout of 0 or a short one (never before it ran out); still waiting after PROBE_MS for a long
 * one (then ended by its signal, or by freeing the lock). Returns the lease, if one was acquired.
 */
export async function expectWait(c: WaitCase): Promise<Lease | undefined> {
  const timeout = c.timeout ?? Number.POSITIVE_INFINITY;
  const startedAt = performance.now();
  const pending = settle(c.start);
  if (c.controller?.signal.aborted) {
    const outcome = await pending;
    assert.ok(!outcome.ok, `${c.what}: resolved with an aborted signal`);
    assert.equal(outcome.error, c.controller.signal.reason, `${c.what}: rejected with something else`);
    return undefined;
  }
  if (!c.busy) {
    const outcome = await pending;
    if (outcome.ok) return outcome.value;
    // Nothing in the way, but the attempt itself may outlast a short timeout (a slow server).
    const elapsed = performance.now() - startedAt;
    if (!(outcome.error instanceof LockTimeoutError && elapsed >= timeout - 1)) throw outcome.error;
    return undefined;
  }
  if (timeout <= SHORT_TIMEOUT) {
    const outcome = await pending;
    const elapsed = performance.now() - startedAt;
    assert.ok(!outcome.ok, `${c.what}: acquired what another holder holds`);
    assert.ok(outcome.error instanceof LockTimeoutError, `${c.what}: ${String(outcome.error)}`);
    // Timers may fire a fraction of a millisecond early on the monotonic clock.
    assert.ok(elapsed >= timeout - 1, `${c.what}: timed out after ${elapsed} ms of ${timeout}`);
    return undefined;
  }
  assert.ok(timeout >= LONG_TIMEOUT, `${c.what}: the test has no verdict for a timeout of ${timeout} ms`);
  const early = await Promise.race([pending, sleep(PROBE_MS).then(() => undefined)]);
  if (early !== undefined) {
    const how = early.ok ? 'resolved' : `rejected with ${String(early.error)}`;
    assert.fail(`${c.what}: a wait of ${timeout} ms ${how} after ${performance.now() - startedAt} ms`);
  }
  if (c.controller !== undefined) {
    const reason = new Error('stopped by the test');
    c.controller.abort(reason);
    const outcome = await pending;
    assert.ok(
      !outcome.ok && outcome.error === reason,
      `${c.what}: abort did not end the wait with its reason`,
    );
    return undefined;
  }
  await c.free();
  const outcome = await pending;
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

export interface LeaseExpectation {
  name: string;
  primitive: Primitive;
  ttl: number;
  /** The owner asked for, if any. */
  owner: string | undefined;
}

/**
 * Checks a lease against what was asked for, as the lease and `inspect()` show it, then releases
 * it. A lease may be lost meanwhile (a 12 ms TTL on a busy machine): that is documented, and then
 * only its reason is checked.
 */
export async function checkLease(
  world: World,
  lease: Lease,
  want: LeaseExpectation,
  what: string,
): Promise<void> {
  assert.equal(lease.name, want.name, `${what}: lease.name`);
  assert.equal(lease.ttl, want.ttl, `${what}: lease.ttl`);
  assert.ok(lease.expiresAt <= Date.now() + want.ttl + 1, `${what}: expiresAt beyond the ttl`);
  const state = await world.a.inspect(want.name, { primitive: want.primitive });
  if (!lease.lost) {
    assert.equal(state?.name, want.name, `${what}: inspect().name`);
    const holder = state?.holders.find((h) => h.token === lease.token);
    if (holder !== undefined) {
      if (want.owner !== undefined) assert.equal(holder.owner, want.owner, `${what}: owner`);
      assert.ok(holder.ttlLeft <= Math.ceil(want.ttl), `${what}: TTL ${holder.ttlLeft} > ${want.ttl}`);
      assert.ok(holder.ttlLeft >= 0, `${what}: the lease's key has no TTL (${holder.ttlLeft})`);
    } else {
      assert.ok(lease.lost, `${what}: inspect() does not show the lease`);
    }
  }
  const released = await lease.release();
  assert.ok(released || lease.lost, `${what}: release() of a lease that was not lost returned false`);
  if (lease.lost)
    assert.ok(lease.signal.reason instanceof LockLostError, `${what}: lost for ${lease.signal.reason}`);
}

/** The TTL a call uses: the one given, else the instance's. */
export function ttlOf(chosen: Record<string, unknown>, fallback: number): number {
  return typeof chosen['ttl'] === 'number' ? chosen['ttl'] : fallback;
}
