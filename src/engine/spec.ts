import { pair, toFence, toNumber } from '../base/replies.ts';
import type { ScriptCall } from '../driver/types.ts';
import type { Lease, LeaseInit } from '../lease.ts';
import type { AcquireOp, Grant, Granted } from '../runners/runner.ts';
import type { GrantTicket } from './grants.ts';
import type { Holding } from './held.ts';
import type { TracedPrimitive } from './tracing.ts';

export type { GrantTicket };

/** The local wait queue a waiter joins: see Queues.wait, src/engine/queues.ts. */
export interface WaitSpec {
  key: string;
  watch: readonly string[];
  shared: boolean;
  /** Keys whose local wake (a lease of this process ended) wakes the queue too; see wait(). */
  wakeOn?: readonly string[];
  /**
   * Of those local wakes, only the one of the key the last attempt found busy wakes the queue
   * (a multiLock waits for the name that blocked it, so two local callers giving names back to
   * each other do not spin).
   */
  wakeOnBlocking?: boolean;
}

/**
 * A primitive as data: its keys, the scripts that take, keep and give back a lease, how their
 * replies read, what a holder watches and what a waiter waits for. The engine runs every spec the
 * same way (one wait loop, one registry of held leases, batched renewal, one runner); a spec
 * never touches a driver. `K` is the spec's keys, `R` what one acquisition asks for (a
 * semaphore's permits, a multiLock's names), kept on the lease as `detail` for its extensions and
 * release. docs/architecture.md, "Adding a primitive", walks through one.
 */
export interface Spec<K = unknown, R = undefined> {
  /** Names the operation in errors, events and spans: 'acquire', 'semaphore acquire', ... */
  readonly operation: string;
  /** The primitive it belongs to, as spans name it (src/tracing.ts). */
  readonly primitive: TracedPrimitive;
  /** Its keys (from its layout); `request` for keys that depend on what is asked (a multiLock's names). */
  keys(prefix: string, name: string, request: R): K;
  /**
   * How to take it: one script (`join`: the caller will wait, so a registering spec registers
   * it), or steps taken one after another, each given back when a later one is busy (InOrder:
   * keys no one script can reach, on Cluster slots or a quorum).
   */
  acquire(
    keys: K,
    stored: string,
    ttl: number,
    request: R,
    join: boolean,
    ticket?: GrantTicket,
  ): ScriptCall | InOrder;
  /** The acquire script's reply; default `{1, fence}` granted, `{0, hint}` busy (see grantOf). */
  parse?(reply: unknown, keys: K): Grant;
  /** One script per key the lease keeps; a lease with several is lost when any one is. */
  extend(keys: K, stored: string, ttl: number, request: R): ScriptCall | readonly ScriptCall[];
  /** Compare-and-delete, one script per key: the lease was held when every one answers 1. */
  release(keys: K, stored: string, request: R): ScriptCall | readonly ScriptCall[];
  /**
   * A release that keeps the name taken `ttl` ms more (AcquireOptions.minHold), read by
   * `released`. Default: `extend` with that TTL, which pushes to every waiter armed on the key; a
   * spec whose waiters listen to other keys (the fair lock's turn keys) wakes them here.
   */
  hold?(keys: K, stored: string, ttl: number, request: R): ScriptCall;
  /** The lease's keys and how pushes for them are read (see Holding). */
  holding(keys: K): Holding;
  /** The local wait queue of a caller (see WaitSpec); `stored` is its value when `registers`. */
  waiting(keys: K, request: R, stored: string): WaitSpec;
  /**
   * Waiters register in Redis (the fair lock's queue, a waiting writer): one stored value for the
   * whole wait, refreshed every `ttl / 3` at most, withdrawn when the waiter gives up.
   * `withdrawn`: a key of this process to wake after the withdraw's reply (no push comes for this
   * process's own writes). Such a spec runs on one Redis slot.
   */
  readonly registers?: {
    withdraw(keys: K, stored: string): ScriptCall;
    withdrawn?(reply: unknown, keys: K): ReturnType<Withdrawn<K>>;
  };
  /**
   * Waiters recorded in Redis for inspection only (an election's candidates, a multiLock's
   * waiters, a mutex's waiters where no direct grant registers them: a quorum, the memory
   * backend, a client without subscriptions): `acquire` is passed `join` and records the waiter
   * when it finds the lock held, with a record that lapses only after the retry hint its busy
   * reply gives, so the attempts the waiter makes anyway keep it and recording adds no round trip
   * (the record's writes run inside those scripts, measured by bench/idle-records.ts at commit 4087520: docs/benchmarks-history.md).
   * One stored value for the whole wait, as for `registers`; `withdraw` forgets the record when
   * the waiter gives up (on every node of a quorum). Used where `grants` are not.
   */
  readonly records?: {
    withdraw(keys: K, stored: string): ScriptCall;
  };
  /**
   * Reads a release reply that says more than 1 or 0 (the fair lock's next in line, a key of
   * this process to wake). Such a spec runs on one Redis.
   */
  released?(reply: unknown, keys: K): { held: boolean; next?: string | undefined };
  /**
   * Direct grants (src/engine/grants.ts): a waiter passes `ticket` to `acquire` when it will
   * wait, and is registered in Redis; a release hands the lock to the first one registered and
   * publishes it. A spec that also `registers` (the fair lock) joins its queue from its second
   * attempt on, with or without a ticket. `withdraw` unregisters a waiter that gave up (and hands on a lock granted to
   * it meanwhile). Only on one Redis whose driver can subscribe; the acquire reply may then be
   * `{1, fence, epoch}` (see Grant.epoch). `withdrawn`, as for `registers`: a key of this
   * process to wake after the withdraw's reply (what it gave back, no push brings here).
   */
  readonly grants?: {
    withdraw(keys: K, stored: string, request: R): ScriptCall;
    withdrawn?(reply: unknown, keys: K): ReturnType<Withdrawn<K>>;
  };
  /** Runs once a lease is granted; returns keys of this process to wake (an election's observers). */
  granted?(lease: Lease, keys: K): readonly string[] | undefined;
  /** The script that takes the lock whoever holds it (mutex): its reply is the fencing token. */
  force?(keys: K, stored: string, ttl: number): ScriptCall;
  /** Quorum support (mutex-shaped keys): without it the spec needs one Redis. */
  readonly quorum?: {
    /** Raises a replica's counter to the token handed out (only for specs taken by one script). */
    confirm?(keys: K, stored: string, fence: bigint): ScriptCall;
    /** Puts the lease back where a replica lost it: one script per script of `extend`. */
    restore(keys: K, lease: Lease, ttl: number): ScriptCall | readonly ScriptCall[];
  };
  /** Builds the lease (an election's Term, a MultiLease); default `new Lease(init)`. */
  make?(init: LeaseInit, grant: Granted): Lease;
}

/**
 * Reads a withdraw's reply: the key(s) of this process's wait queues to wake, if any. (The
 * specs declare it as a method, which keeps `Spec<K>` assignable to `Spec<never>`.)
 */
export type Withdrawn<K> = (reply: unknown, keys: K) => string | readonly string[] | undefined;

/** Steps of an acquisition taken in order (Spec.acquire), each an acquisition of one key. */
export interface InOrder {
  readonly steps: readonly AcquireOp[];
}

export const inOrder = (how: ScriptCall | InOrder): how is InOrder => 'steps' in how;

/** One script, or several, as a list. */
export const calls = (one: ScriptCall | readonly ScriptCall[]): readonly ScriptCall[] =>
  'script' in one ? [one] : (one as readonly ScriptCall[]);

/** The usual acquire reply: `{1, fencingToken}` granted, `{0, retry hint}` busy. */
export function grantOf(reply: unknown, operation: string): Grant {
  const [ok, value] = pair(reply, operation);
  if (ok !== 1) return { hint: toNumber(value) };
  // A third element: granted by a release while the attempt was on its way (acquire.lua).
  const epoch = (reply as unknown[])[2];
  return epoch === undefined ? { fence: toFence(value) } : { fence: toFence(value), epoch: toNumber(epoch) };
}

/** Milliseconds as a script argument. */
export const ms = (ttl: number): string => String(Math.ceil(ttl));
