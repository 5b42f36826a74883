import type { ScriptCall } from '../driver/types.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import { toFence } from './replies.ts';
import type { AcquireOp, ExtendOp, Grant, Runner } from './runner.ts';
import { grantOf, type Spec } from './spec.ts';

/**
 * One acquisition as a runner sees it. One object per attempt, its calls built only when a
 * runner asks (a give-back, a quorum's confirmation): a closure and a call per attempt that the
 * common path never used showed up as garbage in the uncontended profile.
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
    return this.#spec.parse === undefined ? grantOf(reply, this.operation) : this.#spec.parse(reply);
  }

  release(): ScriptCall {
    return this.#spec.release(this.#keys, this.#stored, this.#request);
  }

  confirm(fence: bigint): ScriptCall | undefined {
    return this.#spec.quorum?.confirm(this.#keys, this.#stored, fence);
  }
}

/** Extends and releases one spec's leases for the Renewer, Lease.release and close(). */
export class SpecCore<K, R> implements LeaseCore {
  readonly #spec: Spec<K, R>;
  readonly #runner: Runner;
  readonly #prefix: string;
  readonly #wake: (key: string) => void;

  constructor(spec: Spec<K, R>, runner: Runner, prefix: string, wake: (key: string) => void) {
    this.#spec = spec;
    this.#runner = runner;
    this.#prefix = prefix;
    this.#wake = wake;
  }

  lostWith(key: string, affects: (key: string) => boolean): boolean {
    return this.#runner.lostWith(key, affects);
  }

  async extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const spec = this.#spec;
    const restore = spec.quorum?.restore;
    const ops = items.map(({ lease, ttl }): ExtendOp => {
      const keys = spec.keys(this.#prefix, lease.name);
      const request = lease.detail as R;
      const call = spec.extend(keys, lease.stored, ttl, request);
      if (restore === undefined) return { call, ttl };
      return { call, ttl, restore: restore(keys, lease.stored, ttl, lease.fencingToken) };
    });
    const results = await this.#runner.extend(ops);
    if (this.#runner.replicated) this.#giveBackLost(items, results);
    return results;
  }

  /**
   * A quorum lease lost on a majority may still hold its token on a minority (this very
   * extension renewed it there, or an earlier one restored it before the rest of the loss
   * arrived): give those copies back rather than leave them until their TTL. Compare-and-delete,
   * so a key someone else took stays theirs. Best effort: a copy missed lapses at its TTL.
   */
  #giveBackLost(items: readonly { lease: Lease }[], results: readonly (boolean | Error)[]): void {
    const spec = this.#spec;
    const calls = items
      .filter((_, i) => results[i] === false)
      .map(({ lease }) => spec.release(spec.keys(this.#prefix, lease.name), lease.stored, lease.detail as R));
    if (calls.length > 0) this.#runner.release(calls).catch(() => {});
  }

  async release(lease: Lease): Promise<boolean> {
    const spec = this.#spec;
    const keys = spec.keys(this.#prefix, lease.name);
    const call = spec.release(keys, lease.stored, lease.detail as R);
    if (spec.released !== undefined) {
      const { held, next } = spec.released(await this.#runner.eval(call, 'release'), keys);
      if (next !== undefined) this.#wake(next);
      return held;
    }
    const [result] = await this.#runner.release([call]);
    if (result instanceof Error) throw result;
    return result === true;
  }
}
