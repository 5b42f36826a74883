import { newToken } from '../base/token.ts';
import type { Driver, Subscription } from '../driver/types.ts';

/** A waiter's registration for a direct grant: where to tell it, and which of its attempts this is. */
export interface GrantTicket {
  channel: string;
  epoch: number;
}

/**
 * One waiter's part in direct grants (docs/safety.md, "Direct grants"): its stored value (the
 * same for its whole wait), when each of its attempts was sent, and what to do with a grant.
 */
export class GrantSlot {
  readonly stored: string;
  /** Monotonic send time of each attempt that may still be the one registered, by epoch. */
  readonly #sent = new Map<number, number>();
  /** Send time of the first attempt that registered: a bound for any epoch forgotten. */
  #first: number | undefined;
  /** An attempt that may register it in Redis was sent: a withdraw is owed if it gives up. */
  registered = false;
  /** It has its lease (by a grant or by an attempt): later news of the same grant is ignored. */
  delivered = false;
  /**
   * An attempt without a ticket (the subscription was down, or refused) recorded it for
   * inspection instead (Spec.records): its record is forgotten when the wait ends.
   */
  recorded = false;
  /** Called with a grant published for this waiter (set by the Engine). */
  onGrant: (fence: bigint, epoch: number) => void = () => {};
  /** Called when the subscription comes up: attempt again, now with a ticket (set by the Engine). */
  onUp: () => void = () => {};

  constructor(stored: string) {
    this.stored = stored;
  }

  /** An attempt carrying `epoch` was sent at `at`. */
  sent(epoch: number, at: number): void {
    this.#sent.set(epoch, at);
    this.#first ??= at;
    this.registered = true;
  }

  /**
   * The attempt with `epoch` came back busy: Redis holds that epoch (or a later one in flight)
   * now, so older epochs can no longer be named by a grant.
   */
  busy(epoch: number): void {
    for (const e of this.#sent.keys()) if (e < epoch) this.#sent.delete(e);
  }

  /**
   * When the attempt named by a grant was sent: the grant came after Redis ran it, so the lease's
   * TTL started after this. An epoch not known any more falls back to the first attempt's.
   */
  sentAt(epoch: number): number | undefined {
    return this.#sent.get(epoch) ?? this.#first;
  }
}

/**
 * Direct grants for one Leasehold instance on one Redis: a channel of its own that releases
 * publish grants on (scripts/includes/grant-next.lua), subscribed on a connection of the driver's
 * own when the first waiter asks for a ticket. Until that subscription is up, and while it is
 * down, waiters get no ticket: they do not register and are woken by pushes as before.
 */
export class Grants {
  readonly channel: string;
  readonly #driver: Driver;
  readonly #slots = new Map<string, GrantSlot>();
  #subscription: Subscription | undefined;
  #up = false;
  #closed = false;
  #epoch = 0;

  constructor(driver: Driver, prefix: string) {
    this.#driver = driver;
    this.channel = `${prefix}:grants:${newToken()}`;
  }

  /** A waiter's slot, listening for grants to `stored`. */
  open(stored: string): GrantSlot {
    const slot = new GrantSlot(stored);
    this.#slots.set(stored, slot);
    return slot;
  }

  /** The waiter got its lease or gave up: grants to it are no longer read here. */
  forget(slot: GrantSlot): void {
    if (this.#slots.get(slot.stored) === slot) this.#slots.delete(slot.stored);
  }

  /**
   * Grant messages are wake-ups, not leases (Subscription.hints: a Cluster): the waiter's next
   * attempt reads the grant from Redis, where an undone one is gone.
   */
  get hints(): boolean {
    return this.#subscription?.hints === true;
  }

  /** A ticket for the next attempt, or undefined while the subscription is not up. */
  ticket(): GrantTicket | undefined {
    if (!this.#up) {
      this.#subscribe();
      return undefined;
    }
    this.#epoch += 1;
    return { channel: this.channel, epoch: this.#epoch };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#up = false;
    this.#slots.clear();
    await this.#subscription?.close();
  }

  #subscribe(): void {
    const subscribe = this.#driver.subscribe?.bind(this.#driver);
    if (this.#subscription !== undefined || this.#closed || subscribe === undefined) return;
    try {
      this.#subscription = this.#open(subscribe);
    } catch {
      // A driver that cannot open one: no grants; waiters are woken by pushes as before.
      this.#subscription = { close: async () => {} };
    }
  }

  #open(subscribe: NonNullable<Driver['subscribe']>): Subscription {
    return subscribe(this.channel, {
      message: (text) => this.#message(text),
      up: () => {
        this.#up = !this.#closed;
        // Waiters that asked for a ticket before the subscription was up did not register, and
        // after a resubscribe a grant may have found nobody and dropped theirs: each attempts
        // again now (once per waiter and (re)subscribe), instead of at the next push or timer.
        if (this.#up) for (const slot of [...this.#slots.values()]) if (!slot.delivered) slot.onUp();
      },
      down: () => {
        this.#up = false;
      },
    });
  }

  /** "<fence>\n<epoch>\n<stored>": a release granted the lock to the waiter with that value. */
  #message(text: string): void {
    const first = text.indexOf('\n');
    const second = text.indexOf('\n', first + 1);
    if (first < 0 || second < 0) return;
    const slot = this.#slots.get(text.slice(second + 1));
    if (slot === undefined || slot.delivered) return;
    let fence: bigint;
    try {
      fence = BigInt(text.slice(0, first));
    } catch {
      return;
    }
    slot.onGrant(fence, Number(text.slice(first + 1, second)));
  }
}
