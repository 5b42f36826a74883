import type { ScriptCall } from '../driver/types.ts';
import type { Lease, LeaseInit } from '../lease.ts';
import type { WaitSpec } from './engine.ts';
import type { Holding } from './held.ts';
import { pair, toFence, toNumber } from './replies.ts';
import type { Grant } from './runner.ts';

/**
 * A primitive as data: its keys, the scripts that take, keep and give back a lease, how their
 * replies read, what a holder watches and what a waiter waits for. The engine runs every spec the
 * same way (one wait loop, one registry of held leases, batched renewal, one runner); a spec
 * never touches a driver. `K` is the spec's keys, `R` what one acquisition asks for (the
 * semaphore's permits), kept on the lease as `detail` for its extensions and release.
 * @internal
 */
export interface Spec<K = unknown, R = undefined> {
  /** Names the operation in errors and events: 'acquire', 'semaphore acquire', ... */
  readonly operation: string;
  keys(prefix: string, name: string): K;
  /** The acquire script. `join`: the caller will wait, so a registering spec registers it. */
  acquire(keys: K, stored: string, ttl: number, request: R, join: boolean): ScriptCall;
  /** The acquire reply; default `{1, fence}` granted, `{0, hint}` busy (see grantOf). */
  parse?(reply: unknown): Grant;
  extend(keys: K, stored: string, ttl: number, request: R): ScriptCall;
  release(keys: K, stored: string, request: R): ScriptCall;
  /** The lease's keys and how pushes for them are read (see Holding). */
  holding(keys: K): Holding;
  /** The local wait queue of a caller (see WaitSpec); `stored` is its value when `registers`. */
  waiting(keys: K, request: R, stored: string): WaitSpec;
  /**
   * Waiters register in Redis (the fair lock's queue, a waiting writer): one stored value for
   * the whole wait, refreshed every `ttl / 3` at most, withdrawn when the waiter gives up.
   * `withdrawn`: a key of this process to wake after the withdraw's reply (no push comes for
   * this process's own writes). Such a spec runs on one Redis.
   */
  readonly registers?: {
    withdraw(keys: K, stored: string): ScriptCall;
    withdrawn?(reply: unknown, keys: K): string | undefined;
  };
  /**
   * Reads a release reply that says more than 1 or 0 (the fair lock's next in line, a key of
   * this process to wake). Such a spec runs on one Redis.
   */
  released?(reply: unknown, keys: K): { held: boolean; next?: string | undefined };
  /** Runs once a lease is granted; returns keys of this process to wake (an election's observers). */
  granted?(lease: Lease, keys: K): readonly string[] | undefined;
  /** The script that takes the lock whoever holds it (mutex): its reply is the fencing token. */
  force?(keys: K, stored: string, ttl: number): ScriptCall;
  /** Quorum support (mutex-shaped keys): without it the spec needs one Redis. */
  readonly quorum?: {
    confirm(keys: K, stored: string, fence: bigint): ScriptCall;
    restore(keys: K, stored: string, ttl: number, fence: bigint): ScriptCall;
  };
  /** Builds the lease (an election's Term); default `new Lease(init)`. */
  make?(init: LeaseInit): Lease;
}

/** The usual acquire reply: `{1, fencingToken}` granted, `{0, retry hint}` busy. */
export function grantOf(reply: unknown, operation: string): Grant {
  const [ok, value] = pair(reply, operation);
  return ok === 1 ? { fence: toFence(value) } : { hint: toNumber(value) };
}

/** Milliseconds as a script argument. */
export const ms = (ttl: number): string => String(Math.ceil(ttl));
