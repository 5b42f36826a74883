import { monotonic } from '../base/clock.ts';
import type { Lease, LeaseCore } from '../lease.ts';

/** Hooks the owning instance installs to report renewals. */
export interface RenewalObserver {
  extended(lease: Lease): void;
  extensionFailed(lease: Lease, error: Error): void;
}

/** Retry a failed (unanswered) renewal after this share of the TTL. */
const RETRY_SHARE = 0.1;

/**
 * Renews every lease of one instance from a single timer. Leases due within a window are sent
 * together, one pipelined round trip per core, so leases acquired at different moments fall
 * into step after their first renewal: 10,000 leases cost one round trip per cycle, not 10,000.
 * The same timer enforces validity: a lease whose validity ends unconfirmed is aborted on time,
 * also while Redis is unreachable.
 */
export class Renewer {
  /** Told of each renewal's outcome (events, diagnostics channels, metrics). Must not throw. */
  observer: RenewalObserver | undefined;
  readonly #leases = new Map<Lease, LeaseCore>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #soon = false;

  get size(): number {
    return this.#leases.size;
  }

  add(lease: Lease, core: LeaseCore): void {
    this.#leases.set(lease, core);
    this.#arm(Math.min(lease.renewAt, lease.validUntil));
    // The timer the last release left (see delete) holds the process again.
    if (this.#leases.size === 1) this.#timer?.ref();
  }

  /**
   * The last lease gone, its timer stays, unref'd: an acquisition moments later (one at a time, a
   * job in a loop) reuses it instead of a setTimeout and a clearTimeout per lease. Firing with no
   * lease, it finds nothing to do and arms nothing.
   */
  delete(lease: Lease): void {
    this.#leases.delete(lease);
    if (this.#leases.size === 0) this.#timer?.unref();
  }

  /** Verify `lease` with Redis as soon as possible (an invalidation arrived for its key). */
  verifySoon(lease: Lease): void {
    if (lease.done || !this.#leases.has(lease)) return;
    if (lease.renewing) {
      lease.recheck = true;
      return;
    }
    // Due now, whatever the clock reads: 0 would not be "now" on a clock that reads negative
    // (the fault tests skew a worker's clock by an hour back).
    lease.renewAt = Number.NEGATIVE_INFINITY;
    // Pushes arrive in bursts (one per key in the same chunk): coalesce them into one batch.
    if (!this.#soon) {
      this.#soon = true;
      queueMicrotask(() => {
        this.#soon = false;
        this.#tick();
      });
    }
  }

  /** Verify every lease (after a reconnect or a flush). */
  verifyAll(): void {
    for (const lease of this.#leases.keys()) this.verifySoon(lease);
  }

  close(): void {
    this.#clear();
    this.#leases.clear();
  }

  #clear(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  #arm(at: number): void {
    if (at >= this.#timerAt) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    // Ref'd, as a held lease's socket is on Redis: on the memory backend (no socket) a holder
    // awaiting its signal would otherwise see the process end before a renewal found the loss.
    this.#timer = setTimeout(this.#fire, Math.max(0, Math.ceil(at - monotonic())));
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    this.#tick();
  };

  #tick(): void {
    const now = monotonic();
    const batches = new Map<LeaseCore, Lease[]>();
    let next = Number.POSITIVE_INFINITY;
    for (const [lease, core] of this.#leases) {
      // Timers can fire a fraction of a millisecond early: treat "within 1 ms" as due.
      if (!lease.checkValidity(now + 1)) continue;
      // Being released: extending it now would only race the release (see Lease.lose).
      if (lease.releasing) {
        next = Math.min(next, lease.validUntil);
        continue;
      }
      if (!lease.renewing && lease.renewAt <= now + lease.ttl / 6) {
        let batch = batches.get(core);
        if (batch === undefined) {
          batch = [];
          batches.set(core, batch);
        }
        batch.push(lease);
      } else if (!lease.renewing) {
        next = Math.min(next, lease.renewAt);
      }
      next = Math.min(next, lease.validUntil);
    }
    for (const [core, leases] of batches) void this.#renew(core, leases, now);
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }

  async #renew(core: LeaseCore, leases: Lease[], sentAt: number): Promise<void> {
    for (const lease of leases) {
      lease.renewing = true;
      lease.recheck = false;
    }
    // Each reply confirms only what its own request set: a manual extend(ttl) may change
    // lease.ttl while this batch is in flight (see Lease.confirm).
    const ttls = leases.map((lease) => lease.renewalTtl(sentAt));
    let results: (boolean | Error)[];
    try {
      results = await core.extendMany(leases.map((lease, i) => ({ lease, ttl: ttls[i]! })));
    } catch (error) {
      results = leases.map(() => (error instanceof Error ? error : new Error(String(error))));
    }
    const now = monotonic();
    for (const [i, lease] of leases.entries()) {
      lease.renewing = false;
      const result = results[i];
      if (result === true) {
        lease.confirm(sentAt, ttls[i]!);
        if (!lease.done) this.observer?.extended(lease);
      } else if (result === false) {
        lease.lose('taken', 'the lock key was deleted, expired or taken over by another holder');
      } else {
        lease.renewAt = now + Math.max(10, lease.ttl * RETRY_SHARE);
        if (result instanceof Error) this.observer?.extensionFailed(lease, result);
      }
      if (lease.done) continue;
      if (lease.recheck) {
        this.verifySoon(lease);
      } else {
        this.#arm(Math.min(lease.renewAt, lease.validUntil));
      }
    }
  }
}
