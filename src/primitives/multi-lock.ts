import { drift, monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import { keySlot } from '../driver/cluster-topology.ts';
import { ConnectionClosedError, RedisCommandError } from '../errors.ts';
import { Lease, type LeaseCore, type LeaseInit } from '../lease.ts';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkKnownKeys,
  checkName,
  checkObject,
  checkTtl,
  describe,
  type ValidAcquireOptions,
} from '../options.ts';
import { stamp } from '../owner.ts';
import { loadScript } from '../scripts/index.ts';
import type { Attempt } from '../wait-queue.ts';
import { confirmDurable, durabilityEpoch } from './durability.ts';
import type { Keeper } from './keeper.ts';
import type { ExtendItem, MutexBackend, MutexKeys } from './mutex-backend.ts';
import { toFence, toNumber } from './replies.ts';

const multiAcquire = loadScript('multi-acquire');

/** Most names one multiLock takes: one script's keys, and one batch per renewal, stay small. */
export const MAX_NAMES = 64;

/** Upper bound of the random delay added to a retry timer after an attempt in name order gave up. */
const JITTER_MS = 5;

/** Options of `lh.multiLock()`. */
export interface MultiLockOptions {
  /**
   * Lease validity in ms for this lock's acquisitions (each acquire may pass its own).
   * @default the instance's `ttl`
   */
  ttl?: number;
}

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
 * Redis side of every multiLock of one Leasehold instance. The keys are the mutex's own, so a
 * multiLock and `lh.acquire(name)` exclude each other. All keys in one slot: one script
 * (multi-acquire.lua) takes all or none. Otherwise (Cluster slots, quorum nodes) the names are
 * taken one by one through the mutex's backend, in sorted key order, and a busy name gives back
 * what was taken: no caller ever waits while holding a name, so none can deadlock another.
 * Extension and release go through the mutex's backend, one batch per node.
 * @internal
 */
export class MultiLockCore implements LeaseCore {
  readonly #keeper: Keeper;
  readonly #backend: MutexBackend;
  readonly #sharded: boolean;
  readonly #quorum: boolean;
  /** Per wait queue: the lock key its last attempt found busy (local wakes filter on it). */
  readonly #blocked = new Map<string, string>();

  constructor(keeper: Keeper, backend: MutexBackend, topology: { sharded: boolean; quorum: boolean }) {
    this.#keeper = keeper;
    this.#backend = backend;
    this.#sharded = topology.sharded;
    this.#quorum = topology.quorum;
  }

  plan(names: readonly string[]): Plan {
    const prefix = this.#keeper.ctx.prefix;
    const entries = names
      .map((name) => ({ name, lock: keyFor(prefix, name), fence: keyFor(prefix, name, 'fence') }))
      .sort((a, b) => (a.lock < b.lock ? -1 : a.lock > b.lock ? 1 : 0));
    const slot = keySlot(entries[0]?.lock ?? '');
    const oneSlot = !this.#sharded || entries.every((keys) => keySlot(keys.lock) === slot);
    return {
      names,
      name: names.join(','),
      entries,
      oneScript: !this.#quorum && oneSlot,
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
    return this.#keeper.wait(
      plan.name,
      spec,
      options,
      () => this.attempt(plan, options.ttl, options.owner, true),
      () => this.#blocked.delete(plan.queue),
    ) as Promise<MultiLease>;
  }

  /** One attempt at every name; the lease, or when to try again. `queued`: for a wait queue. */
  async attempt(plan: Plan, ttl: number, owner: string | undefined, queued = false): Promise<Attempt<Lease>> {
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    // The stored value, the same on every name: the random token plus who and since when (src/owner.ts).
    const token = stamp(owner ?? this.#keeper.ctx.owner);
    const sentAt = monotonic();
    // Set before the names taken are given back: giving back wakes local queues blocked on them,
    // and this attempt's own queue must not be among them.
    const blocked = (lock: string) => {
      if (queued) this.#blocked.set(plan.queue, lock);
    };
    const outcome = plan.oneScript
      ? await this.#inOneScript(plan, token, ttl)
      : await this.#inOrder(plan, token, ttl, blocked);
    if (!('fences' in outcome)) {
      blocked(outcome.blocking);
      const wait = this.#keeper.retryIn(outcome.pttl, ttl, this.#backend.tracking);
      // Two callers that collided in name order retry at slightly different times.
      return { retryIn: outcome.gaveBack ? wait + Math.floor(Math.random() * JITTER_MS) : wait };
    }
    this.#blocked.delete(plan.queue);
    // Validity counts from the first command: a reply too late to leave any is given back.
    if (monotonic() >= sentAt + ttl - drift(ttl)) {
      this.#giveBack(plan.entries, token);
      return { retryIn: this.#keeper.ctx.retryDelay };
    }
    return { acquired: this.#hold(plan, token, outcome.fences, ttl, sentAt) };
  }

  async #inOneScript(plan: Plan, token: string, ttl: number): Promise<Outcome> {
    const driver = this.#keeper.ctx.driver;
    const first = plan.entries[0]?.lock ?? '';
    const epoch = durabilityEpoch(driver, first);
    const reply = await this.#keeper.run(
      driver.eval({
        script: multiAcquire,
        keys: plan.entries.flatMap((keys) => [keys.lock, keys.fence]),
        args: [token, String(Math.ceil(ttl))],
      }),
      'multiLock acquire',
    );
    if (!Array.isArray(reply) || reply.length < 2) {
      throw new RedisCommandError(`unexpected reply from the multi-acquire script: ${JSON.stringify(reply)}`);
    }
    if (toNumber(reply[0]) !== 1) {
      const blocking = plan.entries[toNumber(reply[2]) - 1]?.lock ?? first;
      return { pttl: toNumber(reply[1]), blocking, gaveBack: false };
    }
    try {
      // WAIT counts that connection's writes: one check covers every key of the slot.
      await confirmDurable(driver, plan.name, first, token, epoch);
    } catch (error) {
      this.#giveBack(plan.entries, token);
      throw error;
    }
    return { fences: reply.slice(1).map(toFence) };
  }

  async #inOrder(plan: Plan, token: string, ttl: number, blocked: (lock: string) => void): Promise<Outcome> {
    const fences: bigint[] = [];
    for (const keys of plan.entries) {
      let reply: Awaited<ReturnType<MutexBackend['acquire']>>;
      try {
        reply = await this.#keeper.track(this.#backend.acquire(keys, token, ttl));
      } catch (error) {
        this.#giveBack(plan.entries.slice(0, fences.length), token);
        if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
        throw error;
      }
      if ('fence' in reply) {
        fences.push(reply.fence);
        continue;
      }
      const taken = plan.entries.slice(0, fences.length);
      blocked(keys.lock);
      if (taken.length > 0) await this.#giveBack(taken, token);
      return { pttl: reply.pttl, blocking: keys.lock, gaveBack: taken.length > 0 };
    }
    return { fences };
  }

  /**
   * Compare-and-delete of names this token took; then wakes this process's waiters for them
   * (no push comes for our own writes). A multiLock queue wakes only for the name that blocked
   * it, so two local callers that give back to each other do not spin.
   */
  #giveBack(entries: readonly MutexKeys[], token: string): Promise<void> {
    const items = entries.map((keys) => ({ lock: keys.lock, token }));
    const done = this.#keeper.track(this.#backend.release(items)).then(
      () => {},
      () => {},
    );
    return done.then(() => {
      for (const { lock } of items) this.#keeper.wake(lock);
    });
  }

  #hold(plan: Plan, token: string, fences: readonly bigint[], ttl: number, sentAt: number): MultiLease {
    const locks = plan.entries.map((keys) => keys.lock);
    let max = fences[0] ?? 0n;
    for (const fence of fences) if (fence > max) max = fence;
    return this.#keeper.hold(
      { name: plan.name, stored: token, fencingToken: max, ttl, sentAt, core: this },
      { key: locks[0] ?? '', also: locks.slice(1), policy: 'verify', wake: locks },
      (init) => new MultiLease(init, plan, fences),
    ) as MultiLease;
  }

  /** Announces a lease taken outside a wait queue (tryAcquire), as the queues do theirs. */
  acquired(lease: Lease): void {
    this.#keeper.ctx.emit('acquired', { name: lease.name, fencingToken: lease.fencingToken, waited: 0 });
  }

  /** Every name of every lease in one batch per node; a lease with a name lost is lost. */
  async extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const flat: ExtendItem[] = [];
    for (const { lease, ttl } of items) {
      const { entries, fencingTokens, stored: token } = lease as MultiLease;
      for (const keys of entries) {
        const fencingToken = fencingTokens.get(keys.name) ?? 0n;
        flat.push({ lock: keys.lock, fence: keys.fence, token, ttl, fencingToken });
      }
    }
    const results = await this.#backend.extend(flat);
    let at = 0;
    return items.map(({ lease }) => {
      const { entries, stored: token } = lease as MultiLease;
      const mine = results.slice(at, at + entries.length);
      at += entries.length;
      if (mine.includes(false)) {
        // Lost as a whole: give back the names still held rather than let them block others.
        const still = entries.filter((_, i) => mine[i] === true);
        if (still.length > 0) void this.#giveBack(still, token);
        return false;
      }
      return mine.find((result) => result instanceof Error) ?? true;
    });
  }

  /** Compare-and-delete of every name; true when this lease still held them all. */
  async release(lease: Lease): Promise<boolean> {
    const { entries, stored: token } = lease as MultiLease;
    const results = await this.#backend.release(entries.map((keys) => ({ lock: keys.lock, token })));
    const error = results.find((result) => result instanceof Error);
    if (error !== undefined) throw error;
    return results.every((result) => result === true);
  }
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

/** Validates `lh.multiLock(names, options)`; returns the names and the default ttl. */
export function checkMultiLock(
  names: unknown,
  options: unknown,
  defaults: { ttl: number },
): { names: string[]; ttl: number } {
  if (!Array.isArray(names) || names.length === 0) {
    throw new TypeError(
      `leasehold: option "names" must be a non-empty array of lock names; received ${describe(names)}`,
    );
  }
  if (names.length > MAX_NAMES) {
    throw new TypeError(
      `leasehold: option "names" must hold at most ${MAX_NAMES} names; received ${names.length}`,
    );
  }
  const seen = new Set<string>();
  for (const [i, name] of names.entries()) {
    checkName(name, `names[${i}]`);
    if (seen.has(name)) {
      throw new TypeError(
        `leasehold: option "names" must not repeat a name; received ${describe(name)} twice`,
      );
    }
    seen.add(name);
  }
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['ttl'], 'multiLock options');
  return { names: [...names], ttl: o['ttl'] === undefined ? defaults.ttl : checkTtl(o['ttl']) };
}
