import { keySlot } from '../driver/cluster-topology.ts';
import { drift, monotonic } from '../engine/clock.ts';
import type { Engine } from '../engine/engine.ts';
import { toFence, toNumber } from '../engine/replies.ts';
import type { AcquireOp, ExtendOp, Grant, Runner } from '../engine/runner.ts';
import { grantOf } from '../engine/spec.ts';
import type { Attempt } from '../engine/wait-queue.ts';
import { ConnectionClosedError, RedisCommandError } from '../errors.ts';
import { Lease, type LeaseCore, type LeaseInit } from '../lease.ts';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkKnownKeys,
  checkObject,
  type ValidAcquireOptions,
} from '../options/index.ts';
import { loadScript } from '../scripts/index.ts';
import {
  acquireCall,
  confirmCall,
  extendCall,
  type MutexKeys,
  mutexKeys,
  releaseCall,
  restoreCall,
} from './mutex.ts';

const multiAcquire = loadScript('multi-acquire');

/** Upper bound of the random delay added to a retry timer after an attempt in name order gave up. */
const JITTER_MS = 5;

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
  /** @internal Each name's keys, in the global (sorted) order. */
  readonly entries: readonly MutexKeys[];

  /** @internal */
  constructor(init: LeaseInit, plan: Plan, fences: readonly bigint[]) {
    super(init);
    this.names = plan.names;
    this.entries = plan.entries;
    this.fencingTokens = new Map(plan.names.map((name) => [name, 0n]));
    for (const [i, keys] of plan.entries.entries()) this.fencingTokens.set(keys.name, fences[i] ?? 0n);
  }
}

/** What one set of names needs: its keys in global order and how to acquire them. @internal */
export interface Plan {
  names: readonly string[];
  /** `names.join(',')`. */
  name: string;
  /** Sorted by lock key: the one order every caller takes names in. */
  entries: readonly MutexKeys[];
  /** One script can take every key (one node, or one Cluster slot). */
  oneScript: boolean;
  /** The local wait queue's key. */
  queue: string;
}

type Outcome = { fences: bigint[] } | { pttl: number; blocking: string; gaveBack: boolean };

/**
 * Every multiLock of one Leasehold instance: a spec of its own on the engine, with its own
 * attempt. The keys are the mutex's own, so a multiLock and `lh.acquire(name)` exclude each
 * other. All keys in one slot of one Redis: one script (multi-acquire.lua) takes all or none.
 * Otherwise (Cluster slots, a quorum) the names are taken one by one with the mutex's calls, in
 * sorted key order, and a busy name gives back what was taken: no caller ever waits while
 * holding a name, so none can deadlock another. Extension and release are one batch per node.
 * @internal
 */
export class MultiLockCore implements LeaseCore {
  readonly #engine: Engine;
  readonly #runner: Runner;
  readonly #sharded: boolean;
  /** Per wait queue: the lock key its last attempt found busy (local wakes filter on it). */
  readonly #blocked = new Map<string, string>();

  constructor(engine: Engine, topology: { sharded: boolean }) {
    this.#engine = engine;
    this.#runner = engine.runner;
    this.#sharded = topology.sharded;
  }

  plan(names: readonly string[]): Plan {
    const prefix = this.#engine.prefix;
    const entries = names
      .map((name) => mutexKeys(prefix, name))
      .sort((a, b) => (a.lock < b.lock ? -1 : a.lock > b.lock ? 1 : 0));
    const slot = keySlot(entries[0]?.lock ?? '');
    const oneSlot = !this.#sharded || entries.every((keys) => keySlot(keys.lock) === slot);
    return {
      names,
      name: names.join(','),
      entries,
      oneScript: !this.#runner.replicated && oneSlot,
      queue: `multi\n${entries.map((keys) => keys.lock).join('\n')}`,
    };
  }

  acquire(plan: Plan, options: ValidAcquireOptions): Promise<MultiLease> {
    const locks = plan.entries.map((keys) => keys.lock);
    const spec = {
      key: plan.queue,
      watch: locks,
      shared: false,
      wakeOn: locks,
      wakeIf: (key: string) => {
        const blocking = this.#blocked.get(plan.queue);
        return blocking === undefined || blocking === key;
      },
    };
    return this.#engine.wait(
      plan.name,
      spec,
      options,
      () => this.attempt(plan, options.ttl, options.owner, true),
      () => this.#blocked.delete(plan.queue),
    ) as Promise<MultiLease>;
  }

  /** One attempt at every name; the lease, or when to try again. `queued`: for a wait queue. */
  async attempt(plan: Plan, ttl: number, owner: string | undefined, queued = false): Promise<Attempt<Lease>> {
    if (this.#engine.closed) throw new ConnectionClosedError();
    // The stored value, the same on every name: the random token plus who and since when (src/engine/owner.ts).
    const token = this.#engine.stamp(owner);
    const sentAt = monotonic();
    // Set before the names taken are given back: giving back wakes local queues blocked on them,
    // and this attempt's own queue must not be among them.
    const blocked = (lock: string) => {
      if (queued) this.#blocked.set(plan.queue, lock);
    };
    let outcome: Outcome;
    try {
      outcome = plan.oneScript
        ? await this.#inOneScript(plan, token, ttl)
        : await this.#inOrder(plan, token, ttl, blocked);
    } catch (error) {
      if (this.#engine.closed) throw new ConnectionClosedError();
      throw error;
    }
    if (!('fences' in outcome)) {
      blocked(outcome.blocking);
      const wait = this.#engine.retryIn(outcome.pttl, ttl, this.#runner.tracking);
      // Two callers that collided in name order retry at slightly different times.
      return { retryIn: outcome.gaveBack ? wait + Math.floor(Math.random() * JITTER_MS) : wait };
    }
    this.#blocked.delete(plan.queue);
    // Validity counts from the first command: a reply too late to leave any is given back.
    if (monotonic() >= sentAt + ttl - drift(ttl)) {
      this.#giveBack(plan.entries, token);
      return { retryIn: this.#engine.retryDelay };
    }
    return { acquired: this.#hold(plan, token, outcome.fences, ttl, sentAt) };
  }

  async #inOneScript(plan: Plan, token: string, ttl: number): Promise<Outcome> {
    const first = plan.entries[0]!;
    let reply: unknown[] = [];
    const op: AcquireOp = {
      operation: 'multiLock acquire',
      name: plan.name,
      key: first.lock,
      ttl,
      call: {
        script: multiAcquire,
        keys: plan.entries.flatMap((keys) => [keys.lock, keys.fence]),
        args: [token, String(Math.ceil(ttl))],
      },
      parse: (raw): Grant => {
        if (!Array.isArray(raw) || raw.length < 2) {
          throw new RedisCommandError(
            `unexpected reply from the multi-acquire script: ${JSON.stringify(raw)}`,
          );
        }
        reply = raw;
        return toNumber(raw[0]) === 1 ? { fence: 0n } : { hint: toNumber(raw[1]) };
      },
      // A failed WAIT gives back the first key; the catch below gives back every other one.
      release: () => releaseCall(first, token),
      // One Redis only (oneScript is never planned on a quorum): nothing to confirm.
      confirm: () => undefined,
    };
    let grant: Grant;
    try {
      // WAIT counts that connection's writes: one check covers every key of the slot.
      grant = await this.#engine.track(this.#runner.acquire(op));
    } catch (error) {
      if (reply.length > 0) this.#giveBack(plan.entries, token);
      throw error;
    }
    if (!('fence' in grant)) {
      const blocking = plan.entries[toNumber(reply[2]) - 1]?.lock ?? first.lock;
      return { pttl: grant.hint, blocking, gaveBack: false };
    }
    return { fences: reply.slice(1).map(toFence) };
  }

  async #inOrder(plan: Plan, token: string, ttl: number, blocked: (lock: string) => void): Promise<Outcome> {
    const fences: bigint[] = [];
    for (const keys of plan.entries) {
      let grant: Grant;
      try {
        grant = await this.#engine.track(this.#runner.acquire(lockOp(keys, token, ttl)));
      } catch (error) {
        this.#giveBack(plan.entries.slice(0, fences.length), token);
        throw error;
      }
      if ('fence' in grant) {
        fences.push(grant.fence);
        continue;
      }
      const taken = plan.entries.slice(0, fences.length);
      blocked(keys.lock);
      if (taken.length > 0) await this.#giveBack(taken, token);
      return { pttl: grant.hint, blocking: keys.lock, gaveBack: taken.length > 0 };
    }
    return { fences };
  }

  /**
   * Compare-and-delete of names this token took; then wakes this process's waiters for them
   * (no push comes for our own writes). A multiLock queue wakes only for the name that blocked
   * it, so two local callers that give back to each other do not spin.
   */
  #giveBack(entries: readonly MutexKeys[], token: string): Promise<void> {
    const done = this.#engine
      .track(this.#runner.release(entries.map((keys) => releaseCall(keys, token))))
      .then(
        () => {},
        () => {},
      );
    return done.then(() => {
      for (const { lock } of entries) this.#engine.wake(lock);
    });
  }

  #hold(plan: Plan, token: string, fences: readonly bigint[], ttl: number, sentAt: number): MultiLease {
    const locks = plan.entries.map((keys) => keys.lock);
    let max = fences[0] ?? 0n;
    for (const fence of fences) if (fence > max) max = fence;
    return this.#engine.hold(
      { name: plan.name, stored: token, fencingToken: max, ttl, sentAt, core: this },
      { key: locks[0] ?? '', also: locks.slice(1), policy: 'verify', wake: locks },
      (init) => new MultiLease(init, plan, fences),
    ) as MultiLease;
  }

  /** Announces a lease taken outside a wait queue (tryAcquire), as the queues do theirs. */
  acquired(lease: Lease): void {
    this.#engine.acquired(lease);
  }

  lostWith(key: string, affects: (key: string) => boolean): boolean {
    return this.#runner.lostWith(key, affects);
  }

  /** Every name of every lease in one batch per node; a lease with a name lost is lost. */
  async extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const ops: ExtendOp[] = [];
    for (const { lease, ttl } of items) {
      const { entries, fencingTokens, stored: token } = lease as MultiLease;
      for (const keys of entries) {
        const fencingToken = fencingTokens.get(keys.name) ?? 0n;
        const restore = restoreCall(keys, token, ttl, fencingToken);
        ops.push({ call: extendCall(keys, token, ttl), ttl, restore });
      }
    }
    const results = await this.#runner.extend(ops);
    let at = 0;
    return items.map(({ lease }) => {
      const { entries, stored: token } = lease as MultiLease;
      const mine = results.slice(at, at + entries.length);
      at += entries.length;
      if (mine.includes(false)) {
        // Lost as a whole: give back every name rather than let them block others. The lost
        // names too: on a quorum a lost name may still hold this token on a minority of masters
        // (an extension restored it before the rest of the loss arrived), and compare-and-delete
        // leaves a name someone else took alone.
        void this.#giveBack(entries, token);
        return false;
      }
      return mine.find((result) => result instanceof Error) ?? true;
    });
  }

  /** Compare-and-delete of every name; true when this lease still held them all. */
  async release(lease: Lease): Promise<boolean> {
    const { entries, stored: token } = lease as MultiLease;
    const results = await this.#runner.release(entries.map((keys) => releaseCall(keys, token)));
    const error = results.find((result) => result instanceof Error);
    if (error !== undefined) throw error;
    return results.every((result) => result === true);
  }
}

/** One name of a multiLock taken in order: the mutex's own acquire, quorum confirm included. */
function lockOp(keys: MutexKeys, token: string, ttl: number): AcquireOp {
  return {
    operation: 'acquire',
    name: keys.name,
    key: keys.lock,
    ttl,
    call: acquireCall(keys, token, ttl),
    parse: (reply) => grantOf(reply, 'acquire'),
    release: () => releaseCall(keys, token),
    confirm: (fence) => confirmCall(keys, token, fence),
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
export class MultiLock {
  /** The names, in the order given. */
  readonly names: readonly string[];
  readonly #core: MultiLockCore;
  readonly #plan: Plan;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.multiLock(names)`. */
  constructor(core: MultiLockCore, names: readonly string[], defaults: { ttl: number }) {
    this.#core = core;
    this.names = names;
    this.#plan = core.plan(names);
    this.#defaults = defaults;
  }

  /**
   * Waits until every name is free and takes them all at once. Rejects with LockTimeoutError
   * after `timeout`, with `signal.reason` on abort, with ConnectionClosedError on close().
   */
  acquire(options?: AcquireOptions): Promise<MultiLease> {
    try {
      return this.#core.acquire(this.#plan, checkAcquireOptions(options, this.#defaults));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the lease, or undefined when any name is held by someone else. */
  async tryAcquire(options?: Pick<AcquireOptions, 'ttl' | 'owner'>): Promise<MultiLease | undefined> {
    const o = checkObject(options, 'options');
    checkKnownKeys(o, ['ttl', 'owner'], 'tryAcquire options');
    const { ttl, owner } = checkAcquireOptions(o, this.#defaults);
    const result = await this.#core.attempt(this.#plan, ttl, owner);
    if (!('acquired' in result)) return undefined;
    this.#core.acquired(result.acquired);
    return result.acquired as MultiLease;
  }
}
