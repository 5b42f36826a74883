import { optionalText, pair } from '../base/replies.ts';
import { grantRecord } from '../engine/grants.ts';
import { type GrantTicket, ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import type { AcquireOptions, OnceOptions } from '../options/index.ts';
import { loadScript, scripts as mutexScripts } from '../scripts/index.ts';
import { Handle } from './handle.ts';
import { fence, holder, type InspectionSpec, num, pairs, waiter } from './inspection.ts';
import { layout } from './layout.ts';
import { type LeaseWork, withLease } from './with-lease.ts';

const scripts = {
  acquire: loadScript('fair-acquire'),
  release: loadScript('fair-release'),
  hold: loadScript('fair-hold'),
  withdraw: loadScript('fair-withdraw'),
};

/**
 * The fair lock's keys: the lock, the queue (by arrival number), the waiters' deadlines, the
 * arrival and fencing counters, `turn`, the prefix of each waiter's own turn key (its stored
 * value completes it), and `grants`, the records of waiters registered for a direct grant.
 */
export const fairLayout = layout({
  lock: 'fair',
  queue: 'fair:queue',
  deadlines: 'fair:deadlines',
  arrivals: 'fair:arrivals',
  fence: 'fair:fence',
  turn: 'fair:turn:',
  grants: 'fair:grants',
});

type FairKeys = ReturnType<typeof fairLayout.keys>;

/** A fair lock as inspection reads it: `{now, fence, holder, pttl, queued, waiters}`. */
export const fairInspection: InspectionSpec<keyof FairKeys> = {
  script: loadScript('inspect-fair'),
  keys: ['lock', 'fence', 'queue', 'deadlines'],
  state: ['lock', 'fence', 'queue', 'deadlines'],
  held: ['lock'],
  parse(name, r) {
    const now = num(r[0]);
    const value = optionalText(r[2]);
    const queue = pairs(r[5]);
    if (optionalText(r[1]) === undefined && value === undefined && queue.length === 0) return undefined;
    const last = fence(r[1]);
    return {
      name,
      primitive: 'fair',
      holders: value === undefined ? [] : [holder(value, num(r[3]), last)],
      waiters: queue.map(([v, deadline]) => waiter(v, deadline, now)),
      lastFencingToken: last,
      queued: num(r[4]),
    };
  },
};

/** A reply naming the next waiter in line ('' or nil: nobody), as the turn key to wake. */
function turnOf(k: FairKeys, next: unknown): string | undefined {
  const token = optionalText(next);
  return token !== undefined && token !== '' ? k.turn + token : undefined;
}

/**
 * The fair lock as a spec. Waiters queue in a sorted set by arrival number; each has a deadline
 * (Redis's clock) that its attempts push ahead, and a turn key of its own that only it tracks,
 * so each waiter waits in a local queue of its own. A release writes the turn key of the first
 * waiter in line, so exactly one waiter is woken. The lock key is extended with the mutex's script.
 */
export const fairSpec: Spec<FairKeys, undefined> = {
  operation: 'fair acquire',
  primitive: 'fair',
  keys: fairLayout.keys,
  acquire: (k, stored, ttl, _request, join, ticket?: GrantTicket) => {
    const keys = [k.lock, k.queue, k.deadlines, k.arrivals, k.fence, k.turn + stored, k.mark];
    const args = [stored, ms(ttl), ms(ttl), k.turn, join ? '1' : '0'];
    if (ticket === undefined) return { script: scripts.acquire, keys, args };
    // Registered for a direct grant: the records key and this attempt's record.
    keys.push(k.grants);
    args.push(grantRecord(ticket));
    return { script: scripts.acquire, keys, args };
  },
  extend: (k, stored, ttl) => ({ script: mutexScripts.extend, keys: [k.lock], args: [stored, ms(ttl)] }),
  // With the fencing counter and records: the first in line may be granted the lock.
  release: (k, stored) => ({
    script: scripts.release,
    keys: [k.lock, k.queue, k.deadlines, k.fence, k.grants, k.mark],
    args: [stored, k.turn],
  }),
  // A release within minHold: the lock lapses when the hold ends; the first in line learns when.
  hold: (k, stored, ttl) => ({
    script: scripts.hold,
    keys: [k.lock, k.queue, k.deadlines],
    args: [stored, k.turn, ms(ttl)],
  }),
  released: (reply, k) => {
    const [ok, next] = pair(reply, 'fair-release');
    return { held: ok === 1, next: turnOf(k, next) };
  },
  holding: (k) => ({ key: k.lock, policy: 'verify', wake: [] }),
  // Each waiter has its own place in Redis's queue and its own turn key: a queue of its own.
  waiting: (k, _request, stored) => ({ key: k.turn + stored, watch: [k.turn + stored], shared: false }),
  registers: {
    withdraw: (k, stored) => ({
      script: scripts.withdraw,
      keys: [k.lock, k.queue, k.deadlines, k.turn + stored],
      args: [stored, k.turn],
    }),
    // The next waiter may be in this process, which hears no push for its own writes.
    withdrawn: (reply, k) => turnOf(k, reply),
  },
  // Direct grants: the release serves the first in line by a grant when it registered for one
  // (it keeps its FIFO place; a grant only saves it the wake-up and its own attempt).
  grants: {
    withdraw: (k, stored) => ({
      script: scripts.withdraw,
      keys: [k.lock, k.queue, k.deadlines, k.turn + stored, k.fence, k.grants, k.mark],
      args: [stored, k.turn],
    }),
    withdrawn: (reply, k) => turnOf(k, reply),
  },
};

/**
 * A fair (FIFO) lock: waiters from every process are served in the order they arrived. A release
 * wakes only the next waiter in line. A waiter that crashed or stalled is skipped once its
 * deadline (one `ttl` after its last sign of life, by Redis's clock) has passed.
 *
 * @example
 * const payouts = lh.fairLock('payouts');
 * await using turn = await payouts.acquire({ timeout: 30_000 });
 * await pay(batch, { fence: turn.fencingToken });
 */
export class FairLock extends Handle {
  /**
   * Joins the queue and waits for this caller's turn. `ttl` is also how long the queue keeps the
   * place of a waiter that stops responding. Rejects with LockTimeoutError after `timeout`,
   * `signal.reason` on abort, ConnectionClosedError on close(); the place in line is given up.
   */
  acquire(options?: AcquireOptions): Promise<Lease> {
    return this.wait(fairSpec, undefined, options);
  }

  /**
   * Runs `fn` on this caller's turn and releases the lock afterwards, also when `fn` throws. `fn`
   * gets the lease and a signal that aborts when the lease is lost or `options.signal` aborts.
   */
  withLock<T>(fn: LeaseWork<Lease, T>, options?: AcquireOptions): Promise<T> {
    return withLease(() => this.acquire(options), fn, options, 'withLock');
  }

  /** One attempt: the Lease when the lock is free and nobody waits, else undefined. */
  tryAcquire(options?: OnceOptions): Promise<Lease | undefined> {
    return this.once(fairSpec, undefined, options, 'tryAcquire');
  }
}
