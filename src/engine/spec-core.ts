import { toFence } from '../base/replies.ts';
import type { ScriptCall } from '../driver/types.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import type { AcquireOp, ExtendOp, Grant, Runner } from '../runners/runner.ts';
import { confirmed } from './give-backs.ts';
import { GrantNotes } from './grant-notes.ts';
import { calls, grantOf, type Spec } from './spec.ts';
import { traceRelease } from './tracing.ts';

const isOne = (reply: unknown): boolean => reply === 1;

/** Gives keys back now, and again once Redis answers if it does not confirm (GiveBacks). */
export type GiveBack = (name: string, send: () => Promise<unknown>, ttl: number) => void;

/**
 * One acquisition by one script, as a runner sees it. One object per attempt, its other calls
 * built only when a runner asks (a give-back, a quorum's confirmation): the common path never
 * builds them.
 */
export class SpecOp<K, R> implements AcquireOp {
  readonly #spec: Spec<K, R>;
  readonly #keys: K;
  readonly #stored: string;
  readonly #request: R;
  /** A forced acquisition's reply is its fencing token. */
  readonly #forced: boolean;
  readonly operation: string;
  readonly name: string;
  readonly key: string;
  readonly ttl: number;
  readonly call: ScriptCall;

  constructor(
    spec: Spec<K, R>,
    operation: string,
    name: string,
    keys: K,
    stored: string,
    ttl: number,
    request: R,
    call: ScriptCall,
    forced = false,
  ) {
    this.#spec = spec;
    this.#keys = keys;
    this.#stored = stored;
    this.#request = request;
    this.#forced = forced;
    this.operation = operation;
    this.name = name;
    this.key = call.keys[0] ?? '';
    this.ttl = ttl;
    this.call = call;
  }

  parse(reply: unknown): Grant {
    if (this.#forced) return { fence: toFence(reply) };
    return this.#spec.parse === undefined
      ? grantOf(reply, this.operation)
      : this.#spec.parse(reply, this.#keys);
  }

  release(): ScriptCall | readonly ScriptCall[] {
    return this.#spec.release(this.#keys, this.#stored, this.#request);
  }

  confirm(fence: bigint): ScriptCall | undefined {
    return this.#spec.quorum?.confirm?.(this.#keys, this.#stored, fence);
  }
}

/** Extends and releases one spec's leases for the Renewer, Lease.release and close(). */
export class SpecCore<K, R> implements LeaseCore {
  readonly #spec: Spec<K, R>;
  readonly #runner: Runner;
  readonly #prefix: string;
  readonly #wake: (key: string) => void;
  readonly #giveBack: GiveBack;
  readonly #notes: GrantNotes;

  constructor(
    spec: Spec<K, R>,
    runner: Runner,
    prefix: string,
    wake: (key: string) => void,
    giveBack: GiveBack,
  ) {
    this.#spec = spec;
    this.#runner = runner;
    this.#prefix = prefix;
    this.#wake = wake;
    this.#giveBack = giveBack;
    this.#notes = new GrantNotes(runner, (lease) => spec.holding(this.#keys(lease)));
  }

  lostWith(key: string, affects: (key: string) => boolean): boolean {
    return this.#runner.lostWith(key, affects);
  }

  #keys(lease: Lease): K {
    return this.#spec.keys(this.#prefix, lease.name, lease.detail as R);
  }

  /**
   * Every lease's scripts in one batch (per replica). A lease with several keys is lost when any
   * one is, and then gives every key back: the others still hold its token and would block
   * everyone until their TTL.
   */
  async extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const spec = this.#spec;
    const restore = spec.quorum?.restore;
    const ops: ExtendOp[] = [];
    const sizes: number[] = [];
    for (const { lease, ttl } of items) {
      const keys = this.#keys(lease);
      const extend = calls(spec.extend(keys, lease.stored, ttl, lease.detail as R));
      const restores = restore === undefined ? undefined : calls(restore(keys, lease, ttl));
      for (const [i, call] of extend.entries()) {
        const back = restores?.[i];
        ops.push(back === undefined ? { call, ttl } : { call, ttl, restore: back });
      }
      sizes.push(extend.length);
    }
    const results = await this.#runner.extend(ops);
    let at = 0;
    const outcomes = items.map((_, i) => {
      const mine = results.slice(at, at + sizes[i]!);
      at += sizes[i]!;
      if (mine.includes(false)) return false;
      return mine.find((result) => result instanceof Error) ?? true;
    });
    this.#giveBackLost(items, outcomes, sizes);
    for (const [i, { lease }] of items.entries()) {
      if (outcomes[i] === true && lease.noted !== undefined) this.#notes.renewed(lease);
    }
    return outcomes;
  }

  /** A holder that waited got `lease`: its grant note (GrantNotes). */
  note(lease: Lease): void {
    this.#notes.granted(lease);
  }

  /**
   * A lost lease may still hold its token somewhere: its other keys (a multiLock's names), or,
   * on a quorum, a minority of replicas (this very extension renewed it there, or an earlier one
   * restored it before the rest of the loss arrived). Give those back rather than leave them
   * until their TTL. Compare-and-delete, so a key someone else took stays theirs. Best effort: a
   * copy missed lapses at its TTL.
   */
  #giveBackLost(
    items: readonly { lease: Lease }[],
    outcomes: readonly (boolean | Error)[],
    sizes: readonly number[],
  ): void {
    const spec = this.#spec;
    for (const [i, { lease }] of items.entries()) {
      if (outcomes[i] !== false || (!this.#runner.replicated && sizes[i] === 1)) continue;
      const keys = this.#keys(lease);
      const back = calls(spec.release(keys, lease.stored, lease.detail as R));
      const holding = spec.holding(keys);
      // This process's waiters hear no push for our own deletes: wake them once they are done.
      const wake = () => {
        for (const key of holding.wake ?? [holding.key]) this.#wake(key);
      };
      this.#giveBack(lease.name, () => confirmed(this.#runner.release(back)).then(wake), lease.ttl);
    }
  }

  /**
   * A release that keeps the name `ms` more (minHold): the spec's own hold where it has one (a
   * fair lock wakes its next in line to learn when it ends), else its extension with that TTL.
   */
  hold(lease: Lease, ms: number): Promise<boolean> {
    return traceRelease(this.#spec, lease.name, () => this.#hold(lease, ms));
  }

  async #hold(lease: Lease, ms: number): Promise<boolean> {
    const spec = this.#spec;
    const keys = this.#keys(lease);
    const hold = spec.hold?.(keys, lease.stored, ms, lease.detail as R);
    if (hold !== undefined && spec.released !== undefined) {
      const { held, next } = spec.released(await this.#runner.eval(hold, 'release'), keys);
      if (next !== undefined) this.#wake(next);
      return held;
    }
    const [result] = await this.extendMany([{ lease, ttl: ms }]);
    if (result instanceof Error) throw result;
    return result === true;
  }

  release(lease: Lease): Promise<boolean> {
    return traceRelease(this.#spec, lease.name, () => this.#release(lease));
  }

  // then() rather than async/await: every lease's release passes here, and each await is a
  // promise more. Anything thrown before the call goes out is a rejection, as from an async one.
  #release(lease: Lease): Promise<boolean> {
    try {
      const spec = this.#spec;
      const keys = this.#keys(lease);
      const release = spec.release(keys, lease.stored, lease.detail as R);
      const released = spec.released;
      // One script on one Redis (a mutex's, a semaphore's): its reply is 1 when this holder
      // still held it. No outcome arrays on the path every lease takes.
      if (released === undefined && 'script' in release && !this.#runner.replicated)
        return this.#runner.eval(release, 'release', isOne);
      if (released !== undefined && 'script' in release) {
        return this.#runner.eval(release, 'release').then((reply) => {
          const { held, next } = released.call(spec, reply, keys);
          if (next !== undefined) this.#wake(next);
          return held;
        });
      }
      return this.#runner.release(calls(release)).then((results) => {
        const error = results.find((result) => result instanceof Error);
        if (error !== undefined) throw error;
        return results.every((result) => result === true);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
