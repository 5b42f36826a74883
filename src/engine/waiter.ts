import { monotonic, validUntil } from '../base/clock.ts';
import { type LeaseholdError, LockTimeoutError, QuorumError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import type { ValidAcquireOptions } from '../options/index.ts';
import type { Attempts } from './attempts.ts';
import { confirmed } from './give-backs.ts';
import { CLAIM_WINDOW, type GrantListener, type Grants, type GrantTicket } from './grants.ts';
import { Owed } from './owed.ts';
import { calls, type Spec, type WaitSpec } from './spec.ts';
import type { Attempt, Waiter as QueueWaiter, Retry } from './wait-queue.ts';

/** An attempt not sent: the wait ended while it was getting ready. */
const ENDED: Attempt<Lease> = { retryIn: Number.POSITIVE_INFINITY };
/** What an attempt awaits with nothing owed: the same one turn as a settle, without its promise. */
const NOTHING_OWED = Promise.resolve();
const nothing = (): void => {};

/** How Queues settles a waiter: with a lease, or with why not. */
export type Finish = (lease: Lease | undefined, error: unknown) => void;

/**
 * One caller waiting for a lease: everything its wait leaves in Redis and in this process, in one
 * object with one end. Its stored value (one for the whole wait where Redis keeps the waiter: a
 * registration, a record, a direct grant's queue), the send time of each attempt that may be the
 * one a grant names, whether it registered, recorded or listens for a grant, and the give-back
 * an unanswered attempt owes. `end()` is the one withdraw, and once it has run no attempt is sent
 * again: every await in attempt() is followed by a check.
 *
 * Direct grants (docs/direct-grants.md): from its second attempt a waiter registers (a ticket
 * per attempt) and listens; a release hands it the name for a claim window and tells it by a
 * message. It holds the lease at once, valid for the window counted from the attempt the grant
 * names, and its first extension, sent at once, claims the full TTL. A grant it cannot use in
 * time (paused, partitioned, gone) lapses at the window's end, and the name goes to whoever
 * attempts next.
 */
export class Waiter<K = unknown, R = unknown> implements GrantListener, QueueWaiter<Lease> {
  readonly name: string;
  readonly ttl: number;
  readonly oneShot: boolean;
  readonly queue: WaitSpec;
  settled = false;
  /** Why the last attempt could not even ask (Redis or a quorum unreachable), for the timeout error. */
  lastError: LeaseholdError | undefined;
  readonly #spec: Spec<K, R>;
  readonly #request: R;
  readonly #attempts: Attempts;
  readonly #options: ValidAcquireOptions;
  /** Direct grants, for a waiter that may get one. */
  readonly #grants: Grants | undefined;
  /** Wakes this waiter's local queue (an attempt now). */
  readonly #wake: () => void;
  /** One stored value for the whole wait, or '' for a fresh one per attempt. */
  readonly #stored: string;
  /** It joins Redis's queue or record of waiters (Spec.registers / Spec.records). */
  readonly #joins: boolean;
  readonly #owed = new Owed();
  /** The spec's keys for this name and request: the same for every attempt and the withdraw. */
  readonly #keys: K;
  #finish: Finish | undefined;
  #queued: (() => void) | undefined;
  #ended = false;
  #tries = 0;
  /** An attempt that may have put it in Redis's queue went out: a withdraw is owed at the end. */
  #registered = false;
  /** An attempt that may have recorded it for inspection went out (Spec.records). */
  #recorded = false;
  #listening = false;
  /** It holds its lease (by a grant's message, or by a claim): later news of it is ignored. */
  #delivered = false;
  /** Send time of each attempt that may be the one a grant names, by epoch (made at the first). */
  #sent: Map<number, number> | undefined;
  /** Settles when the last attempt asked for has (attempt()). */
  #out: Promise<void> = NOTHING_OWED;

  constructor(
    attempts: Attempts,
    spec: Spec<K, R>,
    name: string,
    request: R,
    options: ValidAcquireOptions,
    grants: Grants | undefined,
    wake: (key: string) => void,
    askedAt?: number,
  ) {
    this.#attempts = attempts;
    this.#spec = spec;
    this.name = name;
    this.#request = request;
    this.#options = options;
    this.ttl = options.ttl;
    this.oneShot = options.timeout === 0;
    this.#grants = grants;
    this.#joins = !this.oneShot && (spec.registers ?? spec.records) !== undefined;
    // Says when the caller asked (inspection's `since`), also when a first attempt went before it.
    this.#stored = grants !== undefined || this.#joins ? attempts.stamp(options.owner, askedAt) : '';
    const keys = spec.keys(attempts.ctx.prefix, name, request);
    this.#keys = keys;
    this.queue = spec.waiting(keys, request, this.#stored);
    const queueKey = this.queue.key;
    this.#wake = () => wake(queueKey);
  }

  get stored(): string {
    return this.#stored;
  }

  get queueKey(): string {
    return this.queue.key;
  }

  /** Queues hands over how it settles the caller's promise, and what to do once queued. */
  bind(finish: Finish, queued: (() => void) | undefined): void {
    this.#finish = finish;
    this.#queued = queued;
  }

  resolve(lease: Lease): void {
    // Its stored value says when it asked: one that waited notes when it got the lease.
    if (this.#tries > 1) {
      lease.noted = { at: Date.now(), sent: Number.NEGATIVE_INFINITY };
      this.#attempts.coreFor(this.#spec).note?.(lease);
    }
    this.#finish?.(lease, undefined);
  }

  giveUp(error?: unknown): void {
    this.#finish?.(undefined, error ?? this.timeoutError());
  }

  queued(): void {
    this.#queued?.();
  }

  /** Unreachable nodes are a different failure than a busy lock: say which one it was. */
  timeoutError(): LeaseholdError {
    const last = this.lastError;
    return last instanceof QuorumError ? last : new LockTimeoutError(this.name, this.#options.timeout, last);
  }

  /**
   * Its first attempt went out before it existed (Engine.acquire's fast path) and gave `verdict`:
   * the next one is its second. Found `busy`, one that may get a grant listens and attempts again
   * at once, registered this time, as attempt() does after a busy first attempt.
   */
  firstWas(verdict: Retry, busy: boolean): Retry {
    this.#tries = 1;
    if (!busy || this.#grants === undefined) return verdict;
    this.#listen();
    return { retryIn: 0 };
  }

  /**
   * One attempt: the lease, or when to try again. Never sends once the wait has ended or holds
   * its lease. One at a time: a release's push of the key and its grant's message come together,
   * and the claim (onGrant) then waits for the attempt the push sent, which ran after the release,
   * found the grant and claimed it. Two at once cost the grantee a second acquire call that
   * changed nothing (direct-grants.test.ts counts them).
   */
  attempt(): Promise<Attempt<Lease>> {
    const next = this.#out.then(() => this.#attempt());
    this.#out = next.then(nothing, nothing);
    return next;
  }

  async #attempt(): Promise<Attempt<Lease>> {
    // Always awaited, even with nothing owed: a claim (onGrant) calls this while a reply of the
    // same wait may be on its way to deliver the lease, and this turn lets it land first. Without
    // it a fair lock's claim re-joined the line after its waiter took the lock and ended, blocking
    // the line for a TTL (the simulation's seed 1720, when this was skipped to save the turn).
    await (this.#owed.unsettled ? this.#owed.settle() : NOTHING_OWED);
    if (this.#ended || this.#delivered) return ENDED;
    const spec = this.#spec;
    const attempts = this.#attempts;
    const first = this.#tries++ === 0;
    const stored = this.#stored || attempts.stamp(this.#options.owner);
    // A waiter that may get a grant registers nothing on its first attempt, so that an
    // uncontended acquisition pays nothing for grants; a registering spec (a fair lock, a
    // writer) joins its queue from the second one on too, ticket or not.
    let ticket: GrantTicket | undefined;
    let join = this.#joins;
    if (this.#grants !== undefined) {
      ticket = first ? undefined : this.#grants.ticket(this.ttl);
      // Listening before the attempt that registers goes out: its grant may come before its reply
      // (and after a first attempt that got no reply, this one is the first to register).
      if (ticket?.channel) this.#listen();
      // Registered specs join their queue; others are recorded for inspection while they cannot
      // register (a find-only ticket: the subscription is down or refused).
      join =
        !first && (spec.registers !== undefined || (ticket?.channel === '' && spec.records !== undefined));
    }
    const keys = this.#keys;
    const how = spec.acquire(keys, stored, this.ttl, this.#request, join, ticket);
    const at = monotonic();
    if (ticket !== undefined && ticket.channel !== '') {
      this.#sent ??= new Map();
      this.#sent.set(ticket.epoch, at);
    }
    if (ticket?.channel || (join && spec.registers !== undefined)) this.#registered = true;
    else if (join && spec.records !== undefined) this.#recorded = true;
    const owed = this.#stored === '' ? undefined : this.#owed;
    const sent = await attempts.send(spec, this.name, this.#request, this.ttl, stored, how, owed, keys);
    // Registered now, and recorded by an attempt while it could not register: the record goes
    // once this one has been answered (sent before, the forget would leave a moment with neither).
    if (ticket?.channel && this.#recorded) this.#forgetRecord();
    const grant = sent.grant;
    if ('fence' in grant) {
      if (this.#delivered) {
        // A grant's message came first and the caller holds the lease; this reply found the same
        // grant. A fresh acquisition under the same value would mean that lease was lost
        // meanwhile: give the key back rather than leave it to its TTL.
        if (grant.epoch === undefined) this.#giveBackNow(stored);
        return { retryIn: 0 };
      }
      // A grant this attempt found and claimed (the script extended it to the full TTL) counts
      // from this attempt's send time, like a fresh acquisition.
      const result = attempts.granted(
        spec,
        this.name,
        this.#request,
        stored,
        grant,
        this.ttl,
        sent.sentAt,
        this.#options,
        owed,
      );
      if ('acquired' in result) this.#delivered = true;
      return result;
    }
    if (ticket !== undefined && ticket.channel !== '') {
      // Redis holds this epoch (or a later one in flight) now: older ones can no longer be named.
      const sent = this.#sent;
      if (sent !== undefined) for (const e of sent.keys()) if (e < ticket.epoch) sent.delete(e);
    }
    // Busy at the first attempt: attempt again at once, registered this time (or, while the
    // subscription is not up, as soon as it is: Grants tells its listeners).
    if (this.#grants !== undefined && first && !this.#ended) {
      this.#listen();
      return { retryIn: 0 };
    }
    return attempts.busy(spec, grant, this.ttl, sent.gaveBack);
  }

  /**
   * A release granted this waiter the name for the claim window, counted from attempt `epoch`'s
   * send time (the release ran after Redis ran that attempt). With at least half the window
   * left, the caller holds the lease at once and its first extension claims the full TTL within
   * what is left; with less, an attempt claims it first (or finds it lapsed), and the lease it
   * returns counts the full TTL from its own send. Holding at once with a few ms left lost leases
   * on a loaded host: the claim's reply came after the window, and the lease ended "validity ran
   * out" a moment after it was handed over (a CI run of cli-postgres.test.ts).
   */
  onGrant(fence: bigint, epoch: number): void {
    if (this.#ended || this.#delivered || this.#grants === undefined) return;
    const sentAt = this.#sent?.get(epoch);
    const window = Math.min(this.ttl, CLAIM_WINDOW);
    // A give-back owed under this value could delete the key the grant set; on a Cluster the
    // message may announce a grant its release undid (Subscription.hints). An attempt reads
    // what stands.
    if (
      sentAt === undefined ||
      this.#owed.unsettled ||
      this.#grants.hints ||
      monotonic() + window / 2 >= validUntil(sentAt, window)
    ) {
      this.#claim();
      return;
    }
    this.#delivered = true;
    this.#stopListening();
    const { name, ttl } = this;
    const lease = this.#attempts.hold(
      this.#spec,
      name,
      this.#request,
      this.#stored,
      { fence },
      ttl,
      sentAt,
      this.#options,
      window,
    );
    if (this.settled) void lease.release().catch(() => {});
    else this.resolve(lease);
  }

  onUp(): void {
    if (!this.#ended) this.#wake();
  }

  /**
   * The wait is over: with the lease (`held`), or without (timeout, abort, close, error). The one
   * withdraw: whatever the wait left in Redis is taken back, once, and nothing is sent after.
   */
  end(held: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#stopListening();
    const attempts = this.#attempts;
    const { name, ttl } = this;
    // Holding the key under this very value, a give-back owed under it would delete it.
    this.#owed.end((send) => {
      if (!held) attempts.ctx.giveBacks.add(name, send, ttl);
    });
    const spec = this.#spec;
    const keys = this.#keys;
    const stored = this.#stored;
    // Recorded for inspection, and taken by an attempt that does not forget the record (a
    // registering one, a grant's message), or by a quorum's attempt that won on a majority while
    // a node it lost on recorded it again: forget it, or inspection lists a holder as a waiter.
    if (held && (this.#grants !== undefined || attempts.runnerFor(spec).replicated)) this.#forgetRecord();
    if (held) return;
    const withdraw = this.#grants === undefined ? spec.registers : spec.grants;
    if (this.#registered && withdraw !== undefined) {
      const call = withdraw.withdraw(keys, stored, this.#request);
      attempts.withdraw(spec, name, call, withdraw.withdrawn?.bind(withdraw), ttl, keys);
    }
    this.#forgetRecord();
  }

  /** Forgets the record an attempt made for inspection (Spec.records), if one may exist. */
  #forgetRecord(): void {
    const records = this.#spec.records;
    if (!this.#recorded || records === undefined) return;
    this.#recorded = false;
    const attempts = this.#attempts;
    const keys = this.#keys;
    attempts.withdraw(this.#spec, this.name, records.withdraw(keys, this.#stored), undefined, this.ttl, keys);
  }

  /** An attempt out of turn that finds the grant and claims it (its reply resolves the caller). */
  #claim(): void {
    this.attempt().then(
      (result) => {
        if ('acquired' in result) {
          if (this.settled) void result.acquired.release().catch(() => {});
          else this.resolve(result.acquired);
        } else if (!this.#delivered) this.#wake();
      },
      () => this.#wake(),
    );
  }

  #listen(): void {
    if (this.#listening || this.#ended) return;
    this.#listening = true;
    this.#grants?.listen(this);
  }

  #stopListening(): void {
    if (!this.#listening) return;
    this.#listening = false;
    this.#grants?.forget(this);
  }

  #giveBackNow(stored: string): void {
    const spec = this.#spec;
    const attempts = this.#attempts;
    const keys = this.#keys;
    const runner = attempts.runnerFor(spec);
    const back = calls(spec.release(keys, stored, this.#request));
    void attempts.giveBack(this.name, () => confirmed(runner.release(back)), this.ttl);
  }
}
