import { drift, monotonic } from '../base/clock.ts';
import { stamp } from '../base/owner.ts';
import type { ScriptCall } from '../driver/types.ts';
import { ConnectionClosedError, QuorumError } from '../errors.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import { toLeaseholdError } from '../runners/failures.ts';
import type { AcquireOp, Busy, Grant, Granted, Runner } from '../runners/runner.ts';
import type { Context } from './context.ts';
import { type FollowSource, follow } from './follow.ts';
import { confirmed, unanswered } from './give-backs.ts';
import type { GrantSlot, Grants } from './grants.ts';
import { Owed } from './owed.ts';
import { Registry } from './registry.ts';
import { calls, inOrder, type Spec, type Withdrawn } from './spec.ts';
import { SpecCore, SpecOp } from './spec-core.ts';
import type { Attempt } from './wait-queue.ts';
import { Waiting } from './waiting.ts';

/** Upper bound of the random delay added to a retry after steps taken in order were given back. */
const JITTER_MS = 5;

/**
 * Runs every primitive's Spec: one wait loop (Waiting), one registry of held leases (Registry),
 * batched renewal (one LeaseCore per spec for the Renewer), all on one Runner (one Redis, or a
 * quorum). Primitives describe keys and scripts; only the engine sends them. Its members are what
 * a primitive's handle calls (acquire, tryAcquire, force, eval, command, follow, oneScript) and
 * what the instance wires to its connections (loseWhere, retryGiveBacks) and close().
 * @internal
 */
export class Engine {
  readonly #ctx: Context;
  readonly #waiting: Waiting;
  readonly #registry: Registry;
  readonly #cores = new Map<Spec<never, never>, SpecCore<never, never>>();

  constructor(ctx: Context) {
    this.#ctx = ctx;
    this.#waiting = new Waiting(ctx);
    this.#registry = new Registry(ctx, (key) => this.#waiting.wake(key));
  }

  get prefix(): string {
    return this.#ctx.prefix;
  }

  get stats(): { held: number; waiting: number } {
    return { held: this.#registry.size, waiting: this.#waiting.waiting };
  }

  /** Waits for `spec`'s lease on `name` (see Waiting.wait for timeout, signal and close). */
  acquire<K, R>(spec: Spec<K, R>, name: string, request: R, options: ValidAcquireOptions): Promise<Lease> {
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const grants = spec.grants !== undefined && options.timeout !== 0 ? this.#ctx.grants : undefined;
    if (grants !== undefined) return this.#acquireGranted(spec, name, request, options, grants);
    // Without grants, a waiter of a spec that records its waiters is recorded (Spec.records).
    const registers = spec.registers ?? spec.records;
    // A registering waiter's stored value is its place in Redis: one for the whole wait.
    const stored = registers === undefined ? '' : this.#stamp(options.owner);
    const join = registers !== undefined && options.timeout !== 0;
    if (registers === undefined || !join) {
      return this.#waiting.wait(name, spec.waiting(keys, request, stored), options, () =>
        this.#attempt(spec, name, request, options.ttl, stored || this.#stamp(options.owner), join),
      );
    }
    const owed = new Owed();
    return this.#waiting.wait(
      name,
      spec.waiting(keys, request, stored),
      options,
      async () => {
        await owed.settle();
        return this.#attempt(spec, name, request, options.ttl, stored, join, undefined, owed);
      },
      () => {
        this.#owedBack(name, owed, options.ttl);
        this.#withdraw(
          spec,
          name,
          keys,
          registers.withdraw(keys, stored),
          spec.registers?.withdrawn?.bind(spec.registers),
          options.ttl,
        );
      },
    );
  }

  /**
   * A waiter that may be granted the lock directly (docs/direct-grants.md): one stored
   * value for its whole wait, registered in Redis by its attempts while it has a ticket, its
   * lease delivered by whichever comes first of the published grant and an attempt that finds
   * the lock granted. Gives the lock back if a grant reaches it after it gave up.
   */
  #acquireGranted<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: ValidAcquireOptions,
    grants: Grants,
  ): Promise<Lease> {
    const stored = this.#stamp(options.owner);
    const ttl = options.ttl;
    let take: ((lease: Lease) => boolean) | undefined;
    let slot: GrantSlot | undefined;
    const owed = new Owed();
    // Wakes this waiter's local queue: an attempt now (its keys worked out again, see below).
    const wake = () =>
      this.#waiting.wake(spec.waiting(spec.keys(this.#ctx.prefix, name, request), request, stored).key);
    const open = (): GrantSlot => {
      const opened = grants.open(stored);
      opened.onGrant = (fence, epoch) => {
        const sentAt = opened.sentAt(epoch);
        if (take === undefined || sentAt === undefined) return;
        const keys = spec.keys(this.#ctx.prefix, name, request);
        // A give-back owed under this value would delete the key the grant set: the next attempt
        // settles it first and then finds whatever is left (the grant, or the lock handed on).
        // On a Cluster the message may announce a grant its release undid (Subscription.hints):
        // the next attempt finds the grant if it stands.
        if (owed.unsettled || grants.hints) {
          wake();
          return;
        }
        // The TTL started when the release ran, after attempt `epoch` reached Redis: count the
        // lease's validity from that attempt's send time. Run out already (a wait longer than
        // the TTL since that attempt): give it on; the waiter registers again with its next attempt.
        if (monotonic() >= sentAt + ttl - drift(ttl)) {
          const runner = this.#runnerFor(spec);
          const back = calls(spec.release(keys, stored, request));
          this.#oweNow(owed, () => confirmed(runner.release(back)));
          wake();
          return;
        }
        opened.delivered = true;
        grants.forget(opened);
        if (opened.recorded) this.#forgetRecord(spec, name, keys, stored, ttl);
        const lease = this.#hold(spec, name, keys, request, stored, { fence }, ttl, sentAt);
        if (!take(lease)) void lease.release().catch(() => {});
      };
      opened.onUp = wake;
      return opened;
    };
    // A registering spec (the fair lock, a waiting writer) joins its queue from its second
    // attempt on, ticket or not.
    const join = spec.registers !== undefined;
    const attempt = async (): Promise<Attempt<Lease>> => {
      await owed.settle();
      if (slot !== undefined) return this.#attempt(spec, name, request, ttl, stored, join, slot, owed);
      // The first attempt registers nothing, so that an uncontended acquisition pays nothing for
      // grants (a slot, a ticket, two more keys). Busy: attempt again at once, registered.
      const result = await this.#attempt(spec, name, request, ttl, stored, false, undefined, owed);
      if ('acquired' in result) return result;
      slot = open();
      return { retryIn: 0 };
    };
    const withdraw = () => {
      this.#owedBack(name, owed, ttl);
      if (slot === undefined) return;
      grants.forget(slot);
      const keys = spec.keys(this.#ctx.prefix, name, request);
      if (slot.recorded && !slot.delivered) this.#forgetRecord(spec, name, keys, stored, ttl);
      if (!slot.registered || slot.delivered) return;
      const given = spec.grants!;
      this.#withdraw(
        spec,
        name,
        keys,
        given.withdraw(keys, stored, request),
        given.withdrawn?.bind(given),
        ttl,
      );
    };
    const keys = spec.keys(this.#ctx.prefix, name, request);
    return this.#waiting.wait(
      name,
      spec.waiting(keys, request, stored),
      options,
      attempt,
      withdraw,
      (adopt) => {
        take = adopt;
      },
    );
  }

  // The two closures a waiter keeps for its whole wait are made here, apart from acquire(): a
  // closure there would keep acquire's keys object alive for every waiter's whole wait, so each
  // attempt works its keys out again instead.
  /** One attempt; undefined when busy. Announces the lease as a wait queue would. */
  async tryAcquire<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    { ttl, owner }: { ttl: number; owner?: string | undefined },
  ): Promise<Lease | undefined> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    const result = await this.#attempt(spec, name, request, ttl, this.#stamp(owner), false);
    if (!('acquired' in result)) return undefined;
    this.#announce(result.acquired);
    return result.acquired;
  }

  /** Takes `spec`'s lock whoever holds it (spec.force); the previous holder hears of it at once. */
  async force<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    { ttl, owner }: { ttl: number; owner?: string | undefined },
  ): Promise<Lease> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    if (spec.force === undefined) throw new TypeError(`leasehold: ${spec.operation} cannot be forced`);
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const stored = this.#stamp(owner);
    const call = spec.force(keys, stored, ttl);
    const sentAt = monotonic();
    const op = new SpecOp(spec, 'forceAcquire', name, keys, stored, ttl, request, call, true);
    const runner = this.#runnerFor(spec);
    let grant: Grant;
    try {
      grant = await this.#registry.track(runner.acquire(op));
    } catch (error) {
      this.#unanswered(runner, op, error);
      throw error;
    }
    if (!('fence' in grant)) {
      throw new QuorumError('forceAcquire: a majority took the lock but did not keep it to the end');
    }
    const lease = this.#hold(spec, name, keys, request, stored, grant, ttl, sentAt);
    this.#announce(lease);
    return lease;
  }

  /** One script of `spec` outside an acquisition (a count, a proclaim): failures as LeaseholdErrors. */
  async eval<K, R>(
    spec: Spec<K, R>,
    call: ScriptCall,
    operation: string,
    wakes: readonly string[] = [],
  ): Promise<unknown> {
    const reply = await this.#guard(() => this.#runnerFor(spec).eval(call, operation), operation);
    // This process's own writes bring it no push (NOLOOP): wake what they concern here.
    for (const key of wakes) this.#waiting.wake(key);
    return reply;
  }

  /** One plain command next to `spec`'s keys (an election's HMGET). */
  command<K, R>(spec: Spec<K, R>, args: readonly string[], operation: string): Promise<unknown> {
    return this.#guard(() => this.#runnerFor(spec).command(args, operation), operation);
  }

  /**
   * Follows what `source` reads (an election's change log), yielding each item once, in order:
   * again on every push or local wake for its key, at the time each read names, and on a retry
   * after Redis did not answer. Ends with `signal.reason`, or ConnectionClosedError on close().
   */
  follow<K, R, T>(
    spec: Spec<K, R>,
    source: FollowSource<T>,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<T> {
    const runner = this.#runnerFor(spec);
    return follow(source, signal, {
      closed: () => this.#ctx.closed,
      onClose: (closer) => this.#waiting.onClose(closer),
      watch: (key, wake) => {
        const unpush = this.#ctx.dispatcher.watch(key, { onChange: wake });
        const unwake = this.#waiting.onWake(key, wake);
        return () => {
          unpush();
          unwake();
        };
      },
      pace: (retryIn) => (runner.tracking ? retryIn : Math.min(retryIn, this.#ctx.retryDelay)),
      retryDelay: this.#ctx.retryDelay,
    });
  }

  /**
   * Whether one script can take all of `keys` of `spec` at once: one Redis (not a quorum), and
   * one Cluster slot. Otherwise a spec takes them in order (InOrder).
   */
  oneScript<K, R>(spec: Spec<K, R>, keys: readonly string[]): boolean {
    const runner = this.#runnerFor(spec);
    return !runner.replicated && runner.sameSlot(keys);
  }

  /** A connection dropped: the leases whose keys lived behind it are lost (Registry.loseWhere). */
  loseWhere(affects: (key: string) => boolean, detail: string, since?: number): void {
    this.#registry.loseWhere(affects, detail, since);
  }

  /** A connection works again: send the give-backs Redis has not confirmed. */
  retryGiveBacks(): void {
    this.#ctx.giveBacks.retry();
  }

  /** close(): waiters reject, attempts in flight settle, held leases are released. */
  async close(): Promise<void> {
    this.#waiting.close();
    await this.#ctx.grants?.close();
    await this.#registry.close();
  }

  /** One attempt of `spec`: the lease, or when to try again (and, where it matters, what was busy). */
  async #attempt<K, R>(
    spec: Spec<K, R>,
    name: string,
    request: R,
    ttl: number,
    stored: string,
    join: boolean,
    slot?: GrantSlot,
    owed?: Owed,
  ): Promise<Attempt<Lease>> {
    const runner = this.#runnerFor(spec);
    const keys = spec.keys(this.#ctx.prefix, name, request);
    const ticket = slot === undefined ? undefined : this.#ctx.grants?.ticket();
    // No ticket (the grant subscription is down, or was refused): a spec that records its
    // waiters records this one instead (Spec.records), so that inspection still lists it.
    const record = slot !== undefined && ticket === undefined && !join && spec.records !== undefined;
    const how = spec.acquire(keys, stored, ttl, request, join || record, ticket);
    let sentAt = monotonic();
    // Registered by this attempt: the record an attempt without a ticket made goes once this one
    // has been answered (sent before it, the forget would leave a moment with neither listed).
    const registers = ticket !== undefined && slot!.recorded;
    if (ticket !== undefined) slot!.sent(ticket.epoch, sentAt);
    else if (join && slot !== undefined) slot.registered = true;
    else if (record) slot!.recorded = true;
    let grant: Grant;
    let gaveBack = false;
    let op: SpecOp<K, R> | undefined;
    try {
      if (inOrder(how)) ({ grant, gaveBack } = await this.#inOrder(runner, name, how.steps, ttl));
      else {
        op = new SpecOp(spec, spec.operation, name, keys, stored, ttl, request, how);
        grant = await this.#registry.track(runner.acquire(op));
      }
    } catch (error) {
      if (op !== undefined) this.#unanswered(runner, op, error, owed);
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw error;
    } finally {
      if (registers) {
        slot!.recorded = false;
        this.#forgetRecord(spec, name, keys, stored, ttl);
      }
    }
    if ('fence' in grant && slot !== undefined) {
      if (slot.delivered) {
        // The published grant came first and the waiter holds the lease: this reply found the
        // same grant. A fresh SET NX under the same value would mean that lease was lost meanwhile;
        // give the key back rather than leave it to its TTL.
        if (grant.epoch === undefined) {
          const back = calls(spec.release(keys, stored, request));
          void this.#giveBack(name, () => confirmed(runner.release(back)), ttl);
        }
        return { retryIn: 0 };
      }
      // Granted before this attempt arrived: the TTL started after attempt `epoch` reached Redis.
      if (grant.epoch !== undefined) sentAt = Math.min(sentAt, slot.sentAt(grant.epoch) ?? sentAt);
    }
    if ('fence' in grant) {
      // The reply came so late that the lease's validity already ran out (a stalled event loop,
      // a slow network): handing it out would give the caller a lease that is lost on arrival.
      // Give the keys back and try again after retryDelay: whatever slowed this reply is likely
      // to slow the next one, and retrying at once would spin on Redis.
      if (monotonic() >= sentAt + ttl - drift(ttl)) {
        const back = calls(spec.release(keys, stored, request));
        const send = () => confirmed(runner.release(back));
        // A wait that sends this value again must not be overtaken by its give-back (Owed).
        if (owed !== undefined) this.#oweNow(owed, send);
        else this.#giveBack(name, send, ttl);
        return { retryIn: this.#ctx.retryDelay };
      }
      if (slot !== undefined) {
        slot.delivered = true;
        this.#ctx.grants?.forget(slot);
        // Recorded by an earlier attempt, and taken by one that did not forget it (Spec.records).
        if (slot.recorded && !record) this.#forgetRecord(spec, name, keys, stored, ttl);
      }
      return { acquired: this.#hold(spec, name, keys, request, stored, grant, ttl, sentAt) };
    }
    if (ticket !== undefined) slot!.busy(ticket.epoch);
    // The key outlives its TTL only until someone touches it, and Redis's own expiry push can
    // lag by seconds on a busy server: retry at the holder's remaining TTL ourselves.
    let retryIn = this.#retryIn(grant.hint, ttl, runner.tracking);
    // A registration lapses `ttl` after the waiter's last attempt: refresh it well before that.
    // (A record, Spec.records, lapses only after the hint this retry follows.)
    if (spec.registers !== undefined) retryIn = Math.min(retryIn, ttl / 3);
    // Two callers that collided taking keys in order retry at slightly different times.
    if (gaveBack) retryIn += Math.floor(Math.random() * JITTER_MS);
    return grant.blocking === undefined ? { retryIn } : { retryIn, blocking: grant.blocking };
  }

  /**
   * Takes `steps` one after another. A busy one gives back what was taken (so no caller ever
   * waits holding a key, and none can deadlock another) and answers with the key that was busy;
   * a failure gives back what was taken and the step whose reply never came.
   */
  async #inOrder(
    runner: Runner,
    name: string,
    steps: readonly AcquireOp[],
    ttl: number,
  ): Promise<{ grant: Granted | Busy; gaveBack: boolean }> {
    const fences: bigint[] = [];
    const giveBack = (taken: readonly AcquireOp[]) => {
      const back = taken.flatMap((step) => calls(step.release()));
      return this.#giveBack(name, () => confirmed(runner.release(back)), ttl);
    };
    for (const step of steps) {
      let grant: Grant;
      try {
        grant = await this.#registry.track(runner.acquire(step));
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

  /**
   * After an acquisition failed: one that went out and got no answer (the connection was given
   * up, or dropped before the reply) may have taken the key all the same, so its give-back is
   * queued, and the key is freed once Redis answers again rather than blocking the name for its
   * TTL. On a quorum, a QuorumError means too few replicas answered: the others may have run the
   * acquisition, or run it later (a stalled server runs what it had buffered when it wakes), and
   * the release the runner sent them at once may have been lost with their connection. Queued
   * too: in the fault matrix's redis-stall-long x quorum, the name was taken again only at the
   * buffered acquisitions' TTL after the heal, on single Redis within milliseconds. (Called from
   * the callers' own catch blocks: an async wrapper would add promises to every acquisition.)
   */
  #unanswered(runner: Runner, op: AcquireOp, error: unknown, owed?: Owed): void {
    if (unanswered(error) || error instanceof QuorumError) {
      const send = () => confirmed(runner.release(calls(op.release())));
      // A wait that sends the same value again pays this before its next attempt (Owed).
      if (owed !== undefined) owed.owe(send);
      else this.#ctx.giveBacks.add(op.name, send, op.ttl);
    }
  }

  /** Owes `send` and sends it now; the wait's next attempt waits for Redis to confirm it. */
  #oweNow(owed: Owed, send: () => Promise<unknown>): void {
    owed.owe(send);
    owed.settle().catch(() => {});
  }

  /** A wait with a debt (Owed) ended without a lease: GiveBacks sends it until Redis confirms. */
  #owedBack(name: string, owed: Owed, ttl: number): void {
    owed.end((send) => this.#ctx.giveBacks.add(name, send, ttl));
  }

  /** Gives keys back now, and again once Redis answers if it does not confirm (GiveBacks). */
  #giveBack(name: string, send: () => Promise<unknown>, ttl: number): Promise<void> {
    return this.#ctx.giveBacks.send(name, send, ttl, (p) => this.#registry.track(p));
  }

  #hold<K, R>(
    spec: Spec<K, R>,
    name: string,
    keys: K,
    request: R,
    stored: string,
    grant: Granted,
    ttl: number,
    sentAt: number,
  ): Lease {
    const core = this.#coreFor(spec);
    const init = { name, stored, fencingToken: grant.fence, ttl, sentAt, core, detail: request };
    const make = spec.make === undefined ? undefined : spec.make.bind(spec);
    const lease = this.#registry.hold(init, spec.holding(keys), make && ((i) => make(i, grant)));
    const wake = spec.granted?.(lease, keys);
    if (wake !== undefined) for (const key of wake) this.#waiting.wake(key);
    return lease;
  }

  /**
   * A registered waiter gave up: withdraw it. Unconfirmed, it is sent again once Redis answers
   * (GiveBacks): until then the registration holds the waiters behind it back.
   */
  #withdraw<K, R>(
    spec: Spec<K, R>,
    name: string,
    keys: K,
    call: ScriptCall,
    withdrawn: Withdrawn<K> | undefined,
    ttl: number,
  ): void {
    const runner = this.#runnerFor(spec);
    const send = async () => {
      // A quorum's record lives on every node it reached: forget it on each (any answer will do).
      if (runner.replicated) {
        const [outcome] = await runner.release([call]);
        if (outcome instanceof Error) throw outcome;
        return;
      }
      // The reply first: `withdrawn?.(await ...)` would skip the call when there is no reader.
      const reply = await runner.eval(call, 'withdraw');
      const next = withdrawn?.(reply, keys);
      if (typeof next === 'string') this.#waiting.wake(next);
      else if (next !== undefined) for (const key of next) this.#waiting.wake(key);
    };
    void this.#giveBack(name, send, ttl);
  }

  /** A wait recorded for inspection ended: forget its record (Spec.records). */
  #forgetRecord<K, R>(spec: Spec<K, R>, name: string, keys: K, stored: string, ttl: number): void {
    const records = spec.records;
    if (records !== undefined)
      this.#withdraw(spec, name, keys, records.withdraw(keys, stored), undefined, ttl);
  }

  /** The LeaseCore the Renewer batches `spec`'s leases by. */
  #coreFor<K, R>(spec: Spec<K, R>): LeaseCore {
    let core = this.#cores.get(spec as Spec<never, never>) as SpecCore<K, R> | undefined;
    if (core === undefined) {
      const wake = (key: string) => this.#waiting.wake(key);
      const giveBack = (name: string, send: () => Promise<unknown>, ttl: number) =>
        void this.#giveBack(name, send, ttl);
      core = new SpecCore(spec, this.#runnerFor(spec), this.#ctx.prefix, wake, giveBack);
      this.#cores.set(spec as Spec<never, never>, core as SpecCore<never, never>);
    }
    return core;
  }

  #runnerFor<K, R>(spec: Spec<K, R>): Runner {
    if (spec.quorum !== undefined) return this.#ctx.runner;
    const single = this.#ctx.single;
    if (single === undefined)
      throw new TypeError(`leasehold: ${spec.operation} needs one Redis, not a quorum`);
    return single;
  }

  /** Sends only while open: a call sent after close() would fail as "Redis unavailable". */
  async #guard(send: () => Promise<unknown>, operation: string): Promise<unknown> {
    if (this.#ctx.closed) throw new ConnectionClosedError();
    try {
      return await this.#registry.track(send());
    } catch (error) {
      if (this.#ctx.closed) throw new ConnectionClosedError();
      throw toLeaseholdError(error, operation);
    }
  }

  /** The stored value of a new lease: a fresh token stamped with its owner (src/base/owner.ts). */
  #stamp(owner: string | undefined): string {
    return stamp(owner ?? this.#ctx.owner);
  }

  /** Announces a lease taken outside a wait queue (tryAcquire, force), as the queues do theirs. */
  #announce(lease: Lease): void {
    this.#ctx.emit('acquired', { name: lease.name, fencingToken: lease.fencingToken, waited: 0 });
  }

  /**
   * The retry delay after a failed attempt: Redis's hint, capped by polling when there are no
   * pushes. A PTTL hint is aimed a millisecond early, because Node's timers fire up to a
   * millisecond late; the attempt then usually sees PTTL 0 or 1, and a key expiring within the
   * millisecond is retried on the next turns of the event loop (a few round trips at most, see
   * WaitQueue), which takes over a crashed holder's lock within a round trip of its expiry.
   */
  #retryIn(hint: number, fallback: number, tracking: boolean): number {
    // -2 (PTTL of a missing key): gone by the time it was read, so try again now.
    const untilChange = hint === -2 ? 0 : hint < 0 ? fallback : hint <= 1 ? 0 : hint - 1;
    return tracking ? untilChange : Math.min(untilChange, this.#ctx.retryDelay);
  }
}
