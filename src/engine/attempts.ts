import { monotonic, validUntil } from '../base/clock.ts';
import { stamp } from '../base/owner.ts';
import type { ScriptCall } from '../driver/types.ts';
import { ConnectionClosedError, QuorumError } from '../errors.ts';
import type { Lease, LeaseCore, LeaseInit } from '../lease.ts';
import { toLeaseholdError } from '../runners/failures.ts';
import type { AcquireOp, Busy, Grant, Granted, Runner } from '../runners/runner.ts';
import type { Context } from './context.ts';
import { confirmed, unanswered } from './give-backs.ts';
import type { HeldLeases } from './held-leases.ts';
import type { Owed } from './owed.ts';
import { calls, type InOrder, inOrder, type Spec, type Withdrawn } from './spec.ts';
import { SpecCore, SpecOp } from './spec-core.ts';
import type { Attempt } from './wait-queue.ts';

/** Upper bound of the random delay added to a retry after steps taken in order were given back. */
const JITTER_MS = 5;

/** How a lease lives once held (AcquireOptions.renew, minHold). */
export interface LeaseMode {
  renew: boolean;
  minHold: number;
}

/** What picks a spec's runner: whether it runs on a quorum, and its name for errors. */
export type Routed = Pick<Spec<never, never>, 'operation' | 'quorum'>;

/** What one acquisition sent and got back. */
export interface Sent {
  grant: Grant;
  /** Steps taken in order were given back (two callers collided): retry a little apart. */
  gaveBack: boolean;
  /** Monotonic send time: a lease's validity counts from here. */
  sentAt: number;
}

/**
 * What every acquisition shares, whoever makes it (a waiter, tryAcquire, forceAcquire): sending
 * one acquisition (one script, or steps in order), reading its verdict, holding what it granted,
 * and giving back what it may have taken when its reply came too late or never. One instance per
 * Engine; the waiters (waiter.ts) and the engine's one-shot calls use it.
 */
export class Attempts {
  readonly #ctx: Context;
  readonly #held: HeldLeases;
  readonly #wake: (key: string) => void;
  readonly #cores = new Map<Spec<never, never>, SpecCore<never, never>>();

  constructor(ctx: Context, held: HeldLeases, wake: (key: string) => void) {
    this.#ctx = ctx;
    this.#held = held;
    this.#wake = wake;
  }

  get ctx(): Context {
    return this.#ctx;
  }

  /**
   * Sends `how` (spec.acquire's call or steps). A reply that never came may have taken the keys:
   * its give-back is owed by the wait (`owed`: paid before the wait's next attempt) or queued.
   */
  async send<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    ttl: number,
    stored: string,
    how: ScriptCall | InOrder,
    owed: Owed | undefined,
    keys: K,
  ): Promise<Sent> {
    const runner = this.runnerFor(spec);
    const sentAt = monotonic();
    if (inOrder(how)) return { ...(await this.#inOrder(runner, name, how, ttl)), sentAt };
    const op = new SpecOp(spec, spec.operation, name, keys, stored, ttl, request, how);
    // In close()'s set until this continuation has run (HeldLeases.enter): no then() of its own.
    const acquiring = runner.acquire(op);
    this.#held.enter(acquiring);
    try {
      return { grant: await acquiring, gaveBack: false, sentAt };
    } catch (error) {
      this.unanswered(runner, op, error, owed);
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw error;
    } finally {
      this.#held.leave(acquiring);
    }
  }

  /**
   * A granted reply: the lease, held from `sentAt` for `ttl` (or a grant's claim window). A
   * reply so late that validity already ran out (a stalled event loop, a slow network) would
   * hand the caller a lease lost on arrival: the keys go back and the caller tries again after
   * retryDelay, since whatever slowed this reply is likely to slow the next one.
   */
  granted<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    stored: string,
    grant: Granted,
    ttl: number,
    sentAt: number,
    mode: LeaseMode,
    owed?: Owed,
  ): Attempt<Lease> {
    if (monotonic() >= validUntil(sentAt, ttl)) {
      const keys = spec.keys(this.#ctx.prefix, name, request);
      const runner = this.runnerFor(spec);
      const back = calls(spec.release(keys, stored, request));
      const send = () => confirmed(runner.release(back));
      // A wait that sends this value again must not be overtaken by its give-back (Owed).
      if (owed !== undefined) this.oweNow(owed, send);
      else this.giveBack(name, send, ttl);
      return { retryIn: this.#ctx.retryDelay };
    }
    return { acquired: this.hold(spec, name, request, stored, grant, ttl, sentAt, mode) };
  }

  /**
   * A busy reply: when to try again. The key outlives its TTL only until someone touches it, and
   * Redis's own expiry push can lag by seconds on a busy server: retry at the holder's remaining
   * TTL ourselves. A PTTL hint is aimed a millisecond early (Node's timers fire up to one late).
   */
  busy<K, R>(spec: Spec<K, R>, busy: Busy, ttl: number, gaveBack: boolean): Attempt<Lease> {
    const { hint } = busy;
    const runner = this.runnerFor(spec);
    // -2 (PTTL of a missing key): gone by the time it was read, so try again now.
    const untilChange = hint === -2 ? 0 : hint < 0 ? ttl : hint <= 1 ? 0 : hint - 1;
    let retryIn = runner.tracking ? untilChange : Math.min(untilChange, this.#ctx.retryDelay);
    // A registration lapses `ttl` after the waiter's last attempt: refresh it well before that.
    if (spec.registers !== undefined) retryIn = Math.min(retryIn, ttl / 3);
    // Two callers that collided taking keys in order retry at slightly different times.
    if (gaveBack) retryIn += Math.floor(Math.random() * JITTER_MS);
    return busy.blocking === undefined ? { retryIn } : { retryIn, blocking: busy.blocking };
  }

  /** Wraps a grant in a Lease held by this instance (renewal, pushes, close()). */
  hold<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    stored: string,
    grant: Granted,
    ttl: number,
    sentAt: number,
    mode: LeaseMode,
    claimWindow?: number,
  ): Lease {
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const core = this.coreFor(spec);
    const { renew, minHold } = mode;
    const init = {
      name,
      stored,
      fencingToken: grant.fence,
      ttl,
      sentAt,
      core,
      detail: request,
      claimWindow,
      renew,
      minHold,
    };
    const make = spec.make === undefined ? undefined : (i: LeaseInit) => spec.make!(i, grant);
    const lease = this.#held.hold(init, spec.holding(keys), make);
    const wake = spec.granted?.(lease, keys);
    if (wake !== undefined) for (const key of wake) this.#wake(key);
    return lease;
  }

  /**
   * After an acquisition failed: one that went out and got no answer (the connection was given
   * up, or dropped before the reply) may have taken the key all the same, so its give-back is
   * queued, and the key is freed once Redis answers again rather than blocking the name for its
   * TTL. On a quorum, a QuorumError means too few replicas answered: the others may have run the
   * acquisition, or run it later (a stalled server runs what it had buffered when it wakes).
   */
  unanswered(runner: Runner, op: AcquireOp, error: unknown, owed?: Owed): void {
    if (!unanswered(error) && !(error instanceof QuorumError)) return;
    const send = () => confirmed(runner.release(calls(op.release())));
    // A wait that sends the same value again pays this before its next attempt (Owed).
    if (owed !== undefined) owed.owe(send);
    else this.#ctx.giveBacks.add(op.name, send, op.ttl);
  }

  /** Owes `send` and sends it now; the wait's next attempt waits for Redis to confirm it. */
  oweNow(owed: Owed, send: () => Promise<unknown>): void {
    owed.owe(send);
    owed.settle().catch(() => {});
  }

  /** Gives keys back now, and again once Redis answers if it does not confirm (GiveBacks). */
  giveBack(name: string, send: () => Promise<unknown>, ttl: number): Promise<void> {
    return this.#ctx.giveBacks.send(name, send, ttl, (p) => this.#held.track(p));
  }

  /**
   * Sends a waiter's withdraw (or a record's forget) now, and again once Redis answers if it does
   * not confirm: until then the registration holds the waiters behind it back. `withdrawn` reads
   * the reply for keys of this process to wake (no push comes for its own writes).
   */
  withdraw<K, R>(
    spec: Spec<K, R>,
    name: string,
    call: ScriptCall,
    withdrawn: Withdrawn<K> | undefined,
    ttl: number,
    keys: K,
  ): void {
    const runner = this.runnerFor(spec);
    const send = async () => {
      // A quorum's record lives on every node it reached: forget it on each (any answer will do).
      if (runner.replicated) {
        const [outcome] = await runner.release([call]);
        if (outcome instanceof Error) throw outcome;
        return;
      }
      const reply = await runner.eval(call, 'withdraw');
      const next = withdrawn?.(reply, keys);
      if (typeof next === 'string') this.#wake(next);
      else if (next !== undefined) for (const key of next) this.#wake(key);
    };
    void this.giveBack(name, send, ttl);
  }

  /** One script of `spec` outside an acquisition: failures as LeaseholdErrors, nothing after close(). */
  async guard(send: () => Promise<unknown>, operation: string): Promise<unknown> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    try {
      return await this.#held.track(send());
    } catch (error) {
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw toLeaseholdError(error, operation);
    }
  }

  /**
   * The stored value of a new lease or wait: a fresh token stamped with its owner and the time
   * (`at`, epoch ms: now) the caller asked (base/owner.ts).
   */
  stamp(owner: string | undefined, at?: number): string {
    return stamp(owner ?? this.#ctx.owner, at);
  }

  runnerFor(spec: Routed): Runner {
    if (spec.quorum !== undefined) return this.#ctx.runner;
    const single = this.#ctx.single;
    if (single === undefined)
      throw new TypeError(`leasehold: ${spec.operation} needs one Redis, not a quorum`);
    return single;
  }

  /** The LeaseCore the Renewer batches `spec`'s leases by. */
  coreFor<K, R>(spec: Spec<K, R>): LeaseCore {
    let core = this.#cores.get(spec as Spec<never, never>) as SpecCore<K, R> | undefined;
    if (core === undefined) {
      const giveBack = (name: string, send: () => Promise<unknown>, ttl: number) =>
        void this.giveBack(name, send, ttl);
      core = new SpecCore(spec, this.runnerFor(spec), this.#ctx.prefix, this.#wake, giveBack);
      this.#cores.set(spec as Spec<never, never>, core as SpecCore<never, never>);
    }
    return core;
  }

  /**
   * Takes `steps` one after another. A busy one gives back what was taken (so no caller ever
   * waits holding a key, and none can deadlock another) and answers with the key that was busy;
   * a failure gives back what was taken and the step whose reply never came.
   */
  async #inOrder(
    runner: Runner,
    name: string,
    { steps }: InOrder,
    ttl: number,
  ): Promise<{ grant: Granted | Busy; gaveBack: boolean }> {
    const fences: bigint[] = [];
    const giveBack = (taken: readonly AcquireOp[]) => {
      const back = taken.flatMap((step) => calls(step.release()));
      return this.giveBack(name, () => confirmed(runner.release(back)), ttl);
    };
    for (const step of steps) {
      let grant: Grant;
      try {
        grant = await this.#held.track(runner.acquire(step));
      } catch (error) {
        giveBack(steps.slice(0, fences.length + (unanswered(error) ? 1 : 0)));
        throw error;
      }
      if ('fence' in grant) {
        fences.push(grant.fence);
        continue;
      }
      const taken = steps.slice(0, fences.length);
      if (taken.length > 0) await giveBack(taken);
      return { grant: { hint: grant.hint, blocking: step.key }, gaveBack: taken.length > 0 };
    }
    let max = fences[0] ?? 0n;
    for (const fence of fences) if (fence > max) max = fence;
    return { grant: { fence: max, fences }, gaveBack: false };
  }
}
