import { toFence, toNumber } from '../base/replies.ts';
import type { Engine } from '../engine/engine.ts';
import { grantOf, ms, type Spec } from '../engine/spec.ts';
import { RedisCommandError } from '../errors.ts';
import { Lease, type LeaseInit } from '../lease.ts';
import type { AcquireOptions, OnceOptions } from '../options/index.ts';
import type { AcquireOp, Grant } from '../runners/runner.ts';
import { loadScript } from '../scripts/index.ts';
import { Handle } from './handle.ts';
import {
  acquireCall,
  confirmCall,
  extendCall,
  type MutexKeys,
  mutexKeys,
  mutexLayout,
  releaseCall,
  restoreCall,
} from './mutex.ts';

const multiAcquire = loadScript('multi-acquire');
const forgetWaiter = loadScript('forget-waiter');
/** What a name's set of multiLock waiters adds to its lock key. */
const MULTI_TAIL = mutexLayout.tail('multi');

/**
 * The lease of a multiLock: every name at once. `fencingTokens` has one token per name, drawn
 * from the same counter as `lh.acquire(name)`'s; `fencingToken` is the largest of them. `name`
 * is the names joined with ',' (for events and error messages).
 */
export class MultiLease extends Lease {
  /** The names held, in the order they were asked for. */
  readonly names: readonly string[];
  /** One fencing token per name: pass `fencingTokens.get(name)` to what that name protects. */
  readonly fencingTokens: Map<string, bigint>;

  /** @internal */
  constructor(init: LeaseInit, plan: Plan, fences: readonly bigint[]) {
    super(init);
    this.names = plan.names;
    this.fencingTokens = new Map(plan.names.map((name) => [name, 0n]));
    for (const [i, keys] of plan.entries.entries()) this.fencingTokens.set(keys.name, fences[i] ?? 0n);
  }
}

/** One set of names: its keys in the one order every caller takes them in, and how. */
export interface Plan {
  names: readonly string[];
  /** `names.join(',')`. */
  name: string;
  /** Sorted by lock key: the one order every caller takes names in. */
  entries: readonly MutexKeys[];
  /** One script can take every key (one node, one Cluster slot): multi-acquire.lua. */
  oneScript: boolean;
  /** Each name's set of multiLock waiters, in the entries' order (recorded by multi-acquire.lua). */
  waiters: readonly string[];
  /** The local wait queue's key. */
  queue: string;
}

/**
 * The multiLock as a spec, over the mutex's own keys, so a multiLock and `lh.acquire(name)`
 * exclude each other. Keys and request are the Plan. All keys in one slot of one Redis: one
 * script takes all or none. Otherwise (Cluster slots, a quorum) the engine takes the names one by
 * one with the mutex's calls, in sorted key order, giving back what it took when a name is busy:
 * no caller ever waits holding a name, so none can deadlock another. A lease is lost when any
 * name is, and then gives every name back (SpecCore). A waiter wakes only for the release of the
 * name that blocked it (WaitSpec.wakeOnBlocking), so two local callers giving back to each other
 * do not spin.
 */
export const multiSpec: Spec<Plan, Plan> = {
  operation: 'multiLock acquire',
  primitive: 'multiLock',
  keys: (_prefix, _name, plan) => plan,
  acquire: (plan, stored, ttl, _request, join) =>
    plan.oneScript
      ? {
          script: multiAcquire,
          keys: [
            ...plan.entries.flatMap((keys) => [keys.lock, keys.fence]),
            ...plan.entries.map((keys) => keys.mark),
            ...(join ? plan.waiters : []),
          ],
          args: join ? [stored, ms(ttl), '1'] : [stored, ms(ttl)],
        }
      : { steps: plan.entries.map((keys) => lockOp(keys, stored, ttl)) },
  parse: (reply, plan): Grant => {
    if (!Array.isArray(reply) || reply.length < 2) {
      throw new RedisCommandError(`unexpected reply from the multi-acquire script: ${JSON.stringify(reply)}`);
    }
    if (toNumber(reply[0]) !== 1) {
      const blocking = plan.entries[toNumber(reply[2]) - 1]?.lock ?? plan.entries[0]?.lock;
      return blocking === undefined ? { hint: toNumber(reply[1]) } : { hint: toNumber(reply[1]), blocking };
    }
    const fences = reply.slice(1).map(toFence);
    let fence = fences[0] ?? 0n;
    for (const f of fences) if (f > fence) fence = f;
    return { fence, fences };
  },
  extend: (plan, stored, ttl) => plan.entries.map((keys) => extendCall(keys, stored, ttl)),
  release: (plan, stored) => plan.entries.map((keys) => releaseCall(keys, stored)),
  holding: (plan) => {
    const locks = plan.entries.map((keys) => keys.lock);
    return { key: locks[0] ?? '', also: locks.slice(1), policy: 'verify', wake: locks };
  },
  waiting: (plan) => {
    const locks = plan.entries.map((keys) => keys.lock);
    return { key: plan.queue, watch: locks, shared: false, wakeOn: locks, wakeOnBlocking: true };
  },
  // On a quorum the names are always taken in order, each step with the mutex's confirm.
  quorum: {
    restore: (plan, lease, ttl) =>
      plan.entries.map((keys) =>
        restoreCall(keys, lease.stored, ttl, (lease as MultiLease).fencingTokens.get(keys.name) ?? 0n),
      ),
  },
  make: (init, grant) => new MultiLease(init, init.detail as Plan, grant.fences ?? []),
};

/**
 * The multiLock taken by one script, whose waiters are recorded on each of their names for
 * inspection (multi-acquire.lua): one stored value for the whole wait, no refresh beyond the
 * attempts it makes anyway (a record lapses only after the blocking holder's TTL), withdrawn from
 * every name when it gives up. Taken in steps (Cluster slots, a quorum), waiters are not recorded.
 */
export const multiOneScriptSpec: Spec<Plan, Plan> = {
  ...multiSpec,
  records: {
    withdraw: (plan, stored) => ({ script: forgetWaiter, keys: [...plan.waiters], args: [stored] }),
  },
};

/** One name taken in order: the mutex's own acquire, quorum confirm included. */
function lockOp(keys: MutexKeys, stored: string, ttl: number): AcquireOp {
  return {
    operation: 'acquire',
    name: keys.name,
    key: keys.lock,
    ttl,
    call: acquireCall(keys, stored, ttl),
    parse: (reply) => grantOf(reply, 'acquire'),
    release: () => releaseCall(keys, stored),
    confirm: (fence) => confirmCall(keys, stored, fence),
  };
}

/**
 * Several lock names held as one: `acquire()` takes all of them or none, with one fencing token
 * per name, and never deadlocks against other callers asking for overlapping names in another
 * order. Each name is the very lock `lh.acquire(name)` takes.
 *
 * @example
 * await using both = await lh.multiLock(['account:1', 'account:2']).acquire({ timeout: 5_000 });
 * await transfer({ signal: both.signal, fences: both.fencingTokens });
 */
export class MultiLock extends Handle {
  /** The names, in the order given. */
  readonly names: readonly string[];
  readonly #plan: Plan;
  readonly #spec: Spec<Plan, Plan>;

  /** @internal Use `lh.multiLock(names)`. */
  constructor(engine: Engine, names: readonly string[], defaults: { ttl: number }) {
    super(engine, names.join(','), defaults);
    this.names = names;
    const entries = names
      .map((name) => mutexKeys(engine.prefix, name))
      .sort((a, b) => (a.lock < b.lock ? -1 : a.lock > b.lock ? 1 : 0));
    const locks = entries.map((keys) => keys.lock);
    const oneScript = engine.oneScript(multiSpec, locks);
    this.#spec = oneScript ? multiOneScriptSpec : multiSpec;
    this.#plan = {
      names,
      name: names.join(','),
      entries,
      oneScript,
      waiters: locks.map((lock) => lock + MULTI_TAIL),
      queue: `multi\n${locks.join('\n')}`,
    };
  }

  /**
   * Waits until every name is free and takes them all at once. Rejects with LockTimeoutError
   * after `timeout`, with `signal.reason` on abort, with ConnectionClosedError on close().
   */
  acquire(options?: AcquireOptions): Promise<MultiLease> {
    return this.wait(this.#spec, this.#plan, options) as Promise<MultiLease>;
  }

  /** One attempt: the lease, or undefined when any name is held by someone else. */
  async tryAcquire(options?: OnceOptions): Promise<MultiLease | undefined> {
    return (await this.once(this.#spec, this.#plan, options, 'tryAcquire')) as MultiLease | undefined;
  }
}
