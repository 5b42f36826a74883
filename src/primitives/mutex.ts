import { fenceMark } from '../base/fence-mark.ts';
import { keyFor } from '../base/keys.ts';
import { optionalText } from '../base/replies.ts';
import type { ScriptCall } from '../driver/types.ts';
import { grantRecord } from '../engine/grants.ts';
import type { Holding } from '../engine/held.ts';
import type { WaitSpec } from '../engine/spec.ts';
import { type GrantTicket, ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import { loadScript, scripts } from '../scripts/index.ts';
import {
  fence,
  holder,
  type InspectionSpec,
  num,
  pairs,
  registered,
  type Waiter,
  waiter,
} from './inspection.ts';
import { layout } from './layout.ts';

/**
 * The mutex's keys: the lock (its holder's stored value, with a TTL), its fencing counter, the
 * queue and records of waiters registered for a direct grant (scripts/includes/grant-next.lua),
 * the waiters recorded for inspection only where no grant registers them (acquire-recorded.lua),
 * and the multiLocks waiting for it (recorded for inspection only: multi-acquire.lua).
 */
export const mutexLayout = layout({
  lock: '',
  fence: 'fence',
  waiters: 'waiters',
  grants: 'grants',
  recorded: 'recorded',
  multi: 'multi',
});
/** What a name's set of recorded waiters adds to its lock key (built only when a waiter waits). */
const RECORDED_TAIL = mutexLayout.tail('recorded');

/** The keys of one mutex (same hash tag). */
export interface MutexKeys {
  /** The lock name, for error messages. */
  readonly name: string;
  readonly lock: string;
  readonly fence: string;
  /** The fence mark of the counter's slot (scripts/includes/fence-mark.lua), named when asked. */
  readonly mark: string;
  /** Waiters registered for a direct grant, in arrival order. */
  readonly waiters: string;
  /** Their records: channel, ttl and epoch while waiting; fence and epoch once granted. */
  readonly grants: string;
}

const FENCE_TAIL = mutexLayout.tail('fence');
const WAITERS_TAIL = mutexLayout.tail('waiters');
const GRANTS_TAIL = mutexLayout.tail('grants');

/**
 * Built on every acquisition, extension and release of every mutex and multiLock: a class whose
 * keys other than the lock's are made when first asked (an extension needs only the lock; an
 * uncontended acquisition no waiters' key), rather than an object literal with a getter, the
 * largest item of leasehold's own in the uncontended pair's profile (docs/benchmarks-history.md,
 * "Uncontended: a CPU profile of the current engine").
 */
class MutexKeySet implements MutexKeys {
  readonly name: string;
  readonly lock: string;
  readonly #prefix: string;
  #fence: string | undefined;
  #mark: string | undefined;
  #waiters: string | undefined;
  #grants: string | undefined;

  constructor(prefix: string, name: string) {
    this.#prefix = prefix;
    this.name = name;
    this.lock = keyFor(prefix, name);
  }

  get fence(): string {
    if (this.#fence === undefined) this.#fence = this.lock + FENCE_TAIL;
    return this.#fence;
  }

  get mark(): string {
    if (this.#mark === undefined) this.#mark = fenceMark(this.#prefix, this.lock);
    return this.#mark;
  }

  get waiters(): string {
    if (this.#waiters === undefined) this.#waiters = this.lock + WAITERS_TAIL;
    return this.#waiters;
  }

  get grants(): string {
    if (this.#grants === undefined) this.#grants = this.lock + GRANTS_TAIL;
    return this.#grants;
  }
}

/** The keys of mutex `name` (a multiLock takes the very same ones). */
export const mutexKeys = (prefix: string, name: string): MutexKeys => new MutexKeySet(prefix, name);

/**
 * A mutex as inspection reads it: `{now, value, pttl, fence, queued, {waiter, ...}, queue pttl,
 * multi queued, {multiLock waiter, lapse, ...}, recorded queued, {recorded waiter, lapse, ...}}`.
 * Waiters are those registered for a direct grant (from their second attempt: docs/inspection.md)
 * or, where no grant registers them, recorded (from their first busy attempt), then the
 * multiLocks that want this name; the recorded ones in the order they began to wait.
 */
export const mutexInspection: InspectionSpec<'lock' | 'fence' | 'waiters' | 'multi' | 'recorded'> = {
  script: loadScript('inspect-mutex'),
  keys: ['lock', 'fence', 'waiters', 'multi', 'recorded'],
  state: ['lock', 'fence', 'waiters', 'multi', 'recorded'],
  held: ['lock'],
  parse(name, r) {
    const value = optionalText(r[1]);
    const multi = num(r[7]) || 0;
    const recorded = num(r[9]) || 0;
    if (value === undefined && optionalText(r[3]) === undefined && multi + recorded === 0) return undefined;
    const last = fence(r[3]);
    const holders = value === undefined ? [] : [holder(value, num(r[2]), last)];
    const now = num(r[0]);
    const inOrder = (flat: unknown, role?: 'multiLock'): Waiter[] =>
      pairs(flat)
        .map(
          ([value, lapse]): Waiter => ({
            ...waiter(value, lapse, now),
            ...(role === undefined ? {} : { role }),
          }),
        )
        .sort((a, b) => (a.since ?? 0) - (b.since ?? 0));
    const queue = registered(r[5], r[6]);
    // A waiter recorded while its grant subscription was down, and registered since: listed once.
    const listed = new Set(queue.map((w) => w.token));
    const unregistered = inOrder(r[10]).filter((w) => !listed.has(w.token));
    const waiters = [...queue, ...unregistered, ...inOrder(r[8], 'multiLock')];
    const queued = (num(r[4]) || 0) + recorded + multi;
    return { name, primitive: 'mutex', holders, waiters, lastFencingToken: last, queued };
  },
};

export const acquireCall = (k: MutexKeys, stored: string, ttl: number): ScriptCall => ({
  script: scripts.acquire,
  keys: [k.lock, k.fence, k.mark],
  args: [stored, ms(ttl)],
});

export const extendCall = (k: MutexKeys, stored: string, ttl: number): ScriptCall => ({
  script: scripts.extend,
  keys: [k.lock],
  args: [stored, ms(ttl)],
});

/**
 * Acquire, recording the waiter for inspection when it finds the lock held (no direct grants:
 * a quorum, the memory backend, a client without subscriptions).
 */
export const recordedCall = (k: MutexKeys, stored: string, ttl: number): ScriptCall => ({
  script: scripts.acquireRecorded,
  keys: [k.lock, k.fence, k.mark, k.lock + RECORDED_TAIL],
  args: [stored, ms(ttl)],
});

/** Acquire, registering the waiter for a direct grant when it finds the lock held. */
export const waitCall = (k: MutexKeys, stored: string, ttl: number, ticket: GrantTicket): ScriptCall => ({
  script: scripts.acquire,
  keys: [k.lock, k.fence, k.mark, k.waiters, k.grants],
  args: [stored, ms(ttl), grantRecord(ticket)],
});

/**
 * A waiter whose grant subscription is down (a find-only ticket): takes the lock if free, finds a
 * grant already made to it, or else is recorded for inspection (acquire.lua with six keys).
 */
export const findCall = (k: MutexKeys, stored: string, ttl: number): ScriptCall => ({
  script: scripts.acquire,
  keys: [k.lock, k.fence, k.mark, k.waiters, k.grants, k.lock + RECORDED_TAIL],
  args: [stored, ms(ttl), ''],
});

/** Compare-and-delete, then a direct grant to the first registered waiter, if any. */
export const releaseCall = (k: MutexKeys, stored: string): ScriptCall => ({
  script: scripts.release,
  keys: [k.lock, k.fence, k.waiters, k.grants, k.mark],
  args: [stored],
});

/** A registered waiter gave up: unregister it, and hand on a lock granted to it meanwhile. */
export const withdrawCall = (k: MutexKeys, stored: string): ScriptCall => ({
  script: scripts.mutexWithdraw,
  keys: [k.lock, k.fence, k.waiters, k.grants, k.mark],
  args: [stored],
});

/** Quorum: raise a replica's counter to the token handed out; 1 while the lock is still ours. */
export const confirmCall = (k: MutexKeys, stored: string, fence: bigint): ScriptCall => ({
  script: scripts.fenceRaise,
  keys: [k.lock, k.fence, k.mark],
  args: [stored, fence.toString()],
});

/** Quorum: put the lease back on a replica that lost its key (restarted empty). */
export const restoreCall = (k: MutexKeys, stored: string, ttl: number, fence: bigint): ScriptCall => ({
  script: scripts.quorumRestore,
  keys: [k.lock, k.fence, k.mark],
  args: [stored, ms(ttl), fence.toString()],
});

/**
 * The mutex as a spec: one string key holding the stored value with a TTL, a fencing counter
 * beside it. It runs on one Redis or on a quorum (confirm and restore below). A holder verifies
 * on every push for its key; waiters of one name share one local queue.
 */
export class MutexSpec implements Spec<MutexKeys, undefined> {
  readonly operation = 'acquire';
  readonly primitive = 'mutex';
  readonly keys = mutexKeys;
  readonly quorum = {
    confirm: confirmCall,
    restore: (k: MutexKeys, lease: Lease, ttl: number) =>
      restoreCall(k, lease.stored, ttl, lease.fencingToken),
  };

  /** Waiters may register for a direct grant (Engine, Grants): one Redis, with pub/sub. */
  readonly grants = { withdraw: withdrawCall };

  /** Where no grant registers them, waiters are recorded for inspection (Spec.records). */
  readonly records = {
    withdraw: (k: MutexKeys, stored: string): ScriptCall => ({
      script: scripts.forgetWaiter,
      keys: [k.lock + RECORDED_TAIL],
      args: [stored],
    }),
  };

  acquire(
    k: MutexKeys,
    stored: string,
    ttl: number,
    _request?: undefined,
    join?: boolean,
    ticket?: GrantTicket,
  ): ScriptCall {
    if (ticket !== undefined && ticket.channel === '' && join === true) return findCall(k, stored, ttl);
    if (ticket !== undefined) return waitCall(k, stored, ttl, ticket);
    return join === true ? recordedCall(k, stored, ttl) : acquireCall(k, stored, ttl);
  }

  force(k: MutexKeys, stored: string, ttl: number): ScriptCall {
    return { script: scripts.force, keys: [k.lock, k.fence, k.mark], args: [stored, ms(ttl)] };
  }

  extend(k: MutexKeys, stored: string, ttl: number): ScriptCall {
    return extendCall(k, stored, ttl);
  }

  release(k: MutexKeys, stored: string): ScriptCall {
    return releaseCall(k, stored);
  }

  holding(k: MutexKeys): Holding {
    return { key: k.lock, policy: 'verify' };
  }

  waiting(k: MutexKeys): WaitSpec {
    return { key: k.lock, watch: [k.lock], shared: false };
  }
}
