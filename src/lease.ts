import { monotonic, validUntil } from './base/clock.ts';
import { tokenOf } from './base/owner.ts';
import { retryable } from './engine/give-backs.ts';
import { type LeaseholdError, LockLostError, LockReleasedError, type LossReason } from './errors.ts';
import { checkTtl } from './options/index.ts';

/** When a granted lease sends its claim, as a share of the claim window after its attempt. */
const CLAIM_AFTER_SHARE = 0.1;

/** See Lease.#ended. */
const RELEASED = Symbol('released');
const none = (): boolean => false;

/**
 * What a primitive provides so that the shared machinery can extend and release its leases.
 */
export interface LeaseCore {
  /** One batched round trip (per node). Per item: true still held (extended), false lost, Error unknown. */
  extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]>;
  /** Compare-and-delete. Resolves true when this holder still held it. */
  release(lease: Lease): Promise<boolean>;
  /**
   * A release that keeps the name taken `ms` more (AcquireOptions.minHold): the lease's keys live
   * that long, and whoever waits learns when they end. Resolves true when this holder still held it.
   */
  hold(lease: Lease, ms: number): Promise<boolean>;
  /** Notes, best effort, when a holder that waited got the lease (Lease.noted) for inspection. */
  note?(lease: Lease): void;
  /**
   * Whether a dropped connection that served the keys `affects` marks loses a lease on `key`
   * (a key majority loses it only past what its majority can spare). Default: `affects(key)`.
   */
  lostWith?(key: string, affects: (key: string) => boolean): boolean;
}

/** Hooks the owning instance installs: renewal scheduling and bookkeeping. */
export interface LeaseHost {
  /** The lease is over, lost (`error`) or released (undefined, or a LockReleasedError): forget it. */
  finished(lease: Lease, error: LeaseholdError | undefined): void;
  /** Its release got no answer: give the key back once Redis answers again (`send` retries it). */
  giveBack(lease: Lease, send: () => Promise<unknown>): void;
}

/** What a Lease is built from (the engine makes them). */
export interface LeaseInit {
  name: string;
  /** What Redis stores for this lease: the token, then the owner stamp (src/engine/owner.ts). */
  stored: string;
  fencingToken: bigint;
  ttl: number;
  /** Monotonic time the acquiring command was sent: validity counts from here, not from the reply. */
  sentAt: number;
  core: LeaseCore;
  host: LeaseHost;
  /** What the acquisition asked for beyond a name (a semaphore's permits), for its extensions. */
  detail?: unknown;
  /**
   * A direct grant: the name is held for this long from `sentAt` until the lease's first
   * extension (sent at once) confirms the full `ttl`.
   */
  claimWindow?: number | undefined;
  /** AcquireOptions.renew: false, no automatic extension (default true). */
  renew?: boolean | undefined;
  /** AcquireOptions.minHold (default 0). */
  minHold?: number | undefined;
}

/**
 * A held lock. Its `signal` aborts the moment the lease is known lost or can no longer be
 * trusted (reason: LockLostError), or once released (reason: LockReleasedError).
 *
 * @example
 * const lease = await lh.acquire('cron:purge');
 * try { await purge({ signal: lease.signal, fence: lease.fencingToken }); }
 * finally { await lease.release(); }
 */
export class Lease {
  /** The lock name. */
  readonly name: string;
  /** This holder's random owner token (128 bits from `crypto`, fresh per acquisition). */
  readonly token: string;
  /**
   * @internal What Redis stores for this lease and every script compares: the token followed
   * by the owner stamp (`<token>~<since>~<owner>`, src/engine/owner.ts).
   */
  readonly stored: string;
  /** Strictly greater than every earlier holder's token for this name: pass it to what you protect. */
  readonly fencingToken: bigint;
  /** @internal LeaseInit.detail. */
  readonly detail: unknown;
  // Made on first use of `signal`: many leases are acquired and released without anyone reading
  // it, and an AbortController is the largest single part of a lease (time and memory).
  #controller: AbortController | undefined;
  /**
   * Why the lease ended; undefined while it runs. RELEASED: a plain release whose
   * LockReleasedError nobody has asked for yet (made on first use: most releases are never
   * looked at, and an Error per release is a stack capture nobody reads).
   */
  #ended: LeaseholdError | typeof RELEASED | undefined;
  readonly #core: LeaseCore;
  readonly #host: LeaseHost;
  #ttl: number;
  #validUntil: number;
  /** Send time of the newest extension confirmed (the acquisition counts as the first). */
  #confirmedAt: number;
  #releasing: Promise<boolean> | undefined;
  readonly #renew: boolean;
  readonly #minHold: number;
  /** Monotonic time the grant was known here: its hold (minHold) counts from no earlier than this. */
  readonly #heldSince: number;
  /** A direct grant not yet claimed: the next extension asks for the full TTL, renewing or not. */
  #claiming: boolean;
  /** @internal Monotonic time the next renewal is due. */
  renewAt: number;
  /**
   * @internal Send time of the newest acquisition or extension Redis confirmed: a server that
   * confirmed it holds the key (a restart announced later spares a lease confirmed after it).
   */
  get confirmedAt(): number {
    return this.#confirmedAt;
  }
  /** @internal A renewal of this lease is in flight. */
  renewing = false;
  /** @internal A change was signalled while renewing: verify again right after. */
  recheck = false;
  /** @internal When a holder that waited got it (`at`, epoch ms) and its note last went out
   * (`sent`, monotonic): src/scripts/note-granted.lua. Undefined when its first attempt got it. */
  noted: { readonly at: number; sent: number } | undefined = undefined;

  /** @internal */
  constructor(init: LeaseInit) {
    this.name = init.name;
    this.stored = init.stored;
    this.token = tokenOf(init.stored);
    this.fencingToken = init.fencingToken;
    this.detail = init.detail;
    this.#core = init.core;
    this.#host = init.host;
    this.#ttl = init.ttl;
    // A direct grant holds the name for its claim window only (docs/direct-grants.md): valid for
    // that long, and extended to the full TTL at once (the claim).
    const validFor = init.claimWindow ?? init.ttl;
    this.#validUntil = validUntil(init.sentAt, validFor);
    this.#confirmedAt = init.sentAt;
    this.#renew = init.renew ?? true;
    this.#minHold = init.minHold ?? 0;
    this.#heldSince = monotonic();
    this.#claiming = init.claimWindow !== undefined;
    // The claim goes out a tenth of the window after the attempt the grant names: a holder that
    // releases sooner (a short job, a busy handoff loop) sends none, which kept a handoff's gap
    // where it was before claims (docs/direct-grants.md, "What it costs"), and the claim still has
    // nine tenths of the window to land.
    this.renewAt = this.#claiming
      ? init.sentAt + validFor * CLAIM_AFTER_SHARE
      : this.#nextRenewal(init.sentAt, init.ttl);
  }

  /** Aborts when the lease is lost (LockLostError) or released (LockReleasedError). */
  get signal(): AbortSignal {
    this.#checkValidity();
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#ended !== undefined) this.#controller.abort(this.#reason());
    }
    return this.#controller.signal;
  }

  /** True when the signal aborted for any reason other than a release. */
  get lost(): boolean {
    this.#checkValidity();
    return (
      this.#ended !== undefined && this.#ended !== RELEASED && !(this.#ended instanceof LockReleasedError)
    );
  }

  /** Local estimate (epoch ms) of when validity runs out if no extension succeeds. */
  get expiresAt(): number {
    return Date.now() + (this.#validUntil - monotonic());
  }

  /** The TTL automatic extension renews with. */
  get ttl(): number {
    return this.#ttl;
  }

  /**
   * @internal The TTL the next extension asks for: the full TTL for a renewing lease (and for a
   * grant's claim), else what is left of it, which verifies the lease without renewing it.
   */
  renewalTtl(now: number): number {
    if (this.#renew || this.#claiming) return this.#ttl;
    return Math.max(1, Math.floor(this.#validUntil - now));
  }

  /** @internal Monotonic end of validity. */
  get validUntil(): number {
    return this.#validUntil;
  }

  /** @internal */
  get done(): boolean {
    return this.#ended !== undefined;
  }

  /** @internal release() was called: its outcome, not a renewal's, decides how the lease ends. */
  get releasing(): boolean {
    return this.#releasing !== undefined;
  }

  /**
   * Extends the lease now (automatic extension runs anyway). With `ttl`, later automatic
   * extensions use it too. Rejects with LockLostError when the lock is no longer held.
   */
  async extend(ttl?: number): Promise<void> {
    const next = ttl === undefined ? this.#ttl : checkTtl(ttl);
    this.#throwIfDone();
    if (this.#releasing !== undefined) throw LockReleasedError.quick(this.name, 'is being released');
    const sentAt = monotonic();
    const [result] = await this.#core.extendMany([{ lease: this, ttl: next }]);
    this.#throwIfDone();
    if (result instanceof Error) throw result;
    if (result !== true) {
      this.lose('taken', 'the lock is no longer held by this lease (extend found another token or none)');
      this.#throwIfDone();
    }
    this.#ttl = next;
    this.#claiming = false;
    this.confirm(sentAt, next);
  }

  /**
   * Compare-and-delete. Resolves true when this call released the lock, false when there was
   * nothing to release: a second call, a lease close() already released, or a lease lost before
   * (then its key is still given back if it is somehow still this holder's; an unreachable Redis
   * does not make that throw). Rejects (RedisUnavailableError, or QuorumError) only when Redis did
   * not confirm a held lease's release within `commandTimeout`: the lease ends locally all the
   * same, and the release is queued and sent again as soon as a connection works
   * (`lh.stats.pendingReleases`, the 'pending-releases' event), so the name is free once Redis
   * is back rather than after its TTL.
   */
  release(): Promise<boolean> {
    // A second call: nothing more to release, whatever the first one found.
    if (this.#releasing !== undefined) return this.#releasing.then(none, none);
    const wasDone = this.done;
    // close() (or an earlier release) ended it and gave the key back already.
    if (wasDone && this.#endedByRelease()) {
      this.#releasing = Promise.resolve(false);
      return this.#releasing;
    }
    const hold = this.#holdLeft();
    if (hold > 0 && !wasDone) return this.#hold(hold);
    this.#releasing = this.#core.release(this).then(
      (held) => this.#released(held),
      (error: unknown) => {
        // Unconfirmed: give the key back once Redis answers again (a lost lease's key may still be
        // this holder's). A refusal (a script error) is not retried; its key lapses at its TTL.
        if (retryable(error)) this.#host.giveBack(this, () => this.#core.release(this));
        if (wasDone) return false;
        // The holder is done either way.
        this.#finish(LockReleasedError.quick(this.name, 'released locally (Redis did not answer)'));
        throw error;
      },
    );
    return this.#releasing;
  }

  /**
   * A release's (or hold's) answer. Not held any more at release time: it was lost first (a
   * takeover or DEL not heard of yet, as when polling), and the signal says so, not "released".
   */
  #released(held: boolean): boolean {
    if (held) this.#finishReleased();
    else
      this.#finish(new LockLostError(this.name, 'taken', 'the lock was no longer held when it was released'));
    return held;
  }

  /** What is left of minHold, counted from when the grant was known here (ms; 0: none). */
  #holdLeft(): number {
    return Math.ceil(this.#heldSince + this.#minHold - monotonic());
  }

  /**
   * release() within minHold: the name stays taken for what is left of it (the keys' TTL set to
   * that), and the lease ends for its holder now. Unconfirmed, the hold is sent again once Redis
   * answers (a give-back that sets what is left then, never a delete), as long as any is left.
   */
  #hold(ms: number): Promise<boolean> {
    this.#releasing = this.#core.hold(this, ms).then(
      (held) => this.#released(held),
      (error: unknown) => {
        if (retryable(error)) {
          this.#host.giveBack(this, () => {
            const left = this.#holdLeft();
            return left > 0 ? this.#core.hold(this, left) : this.#core.release(this);
          });
        }
        this.#finish(LockReleasedError.quick(this.name, 'released locally (Redis did not answer)'));
        throw error;
      },
    );
    return this.#releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /**
   * @internal An extension sent at `sentAt` with `ttl` succeeded. A reply confirms only what its
   * own request set, and never one older than an extension already confirmed: Redis keeps the
   * TTL of the extension it ran last, which is the one sent last (one connection per node keeps
   * order). Confirming with lease.ttl read at reply time let a renewal sent with the old ttl,
   * answered after a manual extend(longer ttl), promise the longer validity while Redis held
   * the shorter one.
   */
  confirm(sentAt: number, ttl: number): void {
    if (this.done || sentAt < this.#confirmedAt) return;
    this.#confirmedAt = sentAt;
    this.#validUntil = validUntil(sentAt, ttl);
    this.#claiming = false;
    this.renewAt = this.#nextRenewal(sentAt, ttl);
    // A reply to a renewal sent before a long stall arrives after validity already ran out.
    this.#checkValidity();
  }

  /**
   * @internal The lease is lost. Ignored once release() was called: a renewal sent after the
   * release (its timer fired meanwhile) finds the key gone, which is the release's doing, and
   * the release's own reply says whether the lease was lost first.
   */
  lose(reason: LossReason, detail: string, cause?: unknown): void {
    if (this.#releasing !== undefined) return;
    this.#finish(new LockLostError(this.name, reason, detail, cause === undefined ? undefined : { cause }));
  }

  /** @internal Ends the lease locally with `error` as the signal's reason (close() uses this). */
  end(error: LeaseholdError): void {
    this.#finish(error);
  }

  /** @internal Aborts now if validity has run out (called by timers and by every getter). */
  checkValidity(now = monotonic()): boolean {
    if (this.done) return false;
    if (now < this.#validUntil) return true;
    // Released by its holder, and Redis has not confirmed in time: the holder is done with it.
    if (this.#releasing !== undefined) {
      this.#finish(
        LockReleasedError.quick(this.name, 'released (Redis had not confirmed when validity ran out)'),
      );
      return false;
    }
    this.lose(
      'validity',
      `validity ran out ${Math.round(now - this.#validUntil)} ms ago with no confirmed extension`,
    );
    return false;
  }

  #checkValidity(): void {
    this.checkValidity();
  }

  /** When to extend next: a third of the TTL on, or never for a lease that does not renew. */
  #nextRenewal(sentAt: number, ttl: number): number {
    return this.#renew ? sentAt + ttl / 3 : Number.POSITIVE_INFINITY;
  }

  #finish(error: LeaseholdError): void {
    if (this.done) return;
    this.#ended = error;
    this.#controller?.abort(error);
    this.#host.finished(this, error);
  }

  /** A plain release: the reason is made only if a signal exists or someone asks for it. */
  #finishReleased(): void {
    if (this.done) return;
    this.#ended = RELEASED;
    if (this.#controller !== undefined) this.#controller.abort(this.#reason());
    this.#host.finished(this, undefined);
  }

  #endedByRelease(): boolean {
    return this.#ended === RELEASED || this.#ended instanceof LockReleasedError;
  }

  /** Why the lease ended (after it ended). */
  #reason(): LeaseholdError {
    if (this.#ended === RELEASED || this.#ended === undefined)
      this.#ended = LockReleasedError.quick(this.name);
    return this.#ended;
  }

  #throwIfDone(): void {
    if (this.#ended !== undefined) throw this.#reason();
  }
}
