import { newToken } from '../base/token.ts';
import type { Driver, Subscription } from '../driver/types.ts';

/**
 * What a waiter's attempt tells Redis about direct grants: the channel to publish a grant on,
 * which attempt of the wait this is (its record names the last one Redis ran), and the claim
 * window a grant may hold the name for (docs/direct-grants.md). `channel` '': the subscription
 * is down, so the attempt does not register; it only looks for a grant already made to it.
 */
export interface GrantTicket {
  channel: string;
  epoch: number;
  window: number;
}

/**
 * The record an attempt registers with ("<channel>\n<window>\n<epoch>", then `more` fields), as
 * the scripts read it (includes/grant.lua); '' for a find-only ticket, which registers nothing.
 */
export function grantRecord(ticket: GrantTicket, ...more: readonly (string | number)[]): string {
  if (ticket.channel === '') return '';
  return [ticket.channel, Math.ceil(ticket.window), ticket.epoch, ...more].join('\n');
}

/** A waiter listening for a grant (src/engine/waiter.ts). */
export interface GrantListener {
  readonly stored: string;
  /** A release granted this waiter the name, with `fence`, naming its attempt `epoch`. */
  onGrant(fence: bigint, epoch: number): void;
  /** The subscription came up (again): attempt now, with a ticket. */
  onUp(): void;
}

/**
 * How long a grant holds a released name for a waiter that has not claimed it (docs/direct-grants.md,
 * "The claim window"): the bound on how long a name can sit with a waiter that cannot take it.
 */
export const CLAIM_WINDOW = 500;

/**
 * Direct grants for one Leasehold instance on one Redis: a channel of its own that releases
 * publish grants on (scripts/includes/grant.lua), subscribed on a connection of the driver's own
 * when the first waiter asks for a ticket, and the waiters listening on it.
 */
export class Grants {
  readonly channel: string;
  readonly #driver: Driver;
  readonly #listeners = new Map<string, GrantListener>();
  #subscription: Subscription | undefined;
  #up = false;
  #closed = false;
  #epoch = 0;

  constructor(driver: Driver, prefix: string) {
    this.#driver = driver;
    this.channel = `${prefix}:grants:${newToken()}`;
  }

  /** Waiters listening for a grant now. */
  get size(): number {
    return this.#listeners.size;
  }

  /**
   * Grant messages are wake-ups, not leases (Subscription.hints: a Cluster): the waiter's next
   * attempt reads the grant from Redis, where an undone one is gone.
   */
  get hints(): boolean {
    return this.#subscription?.hints === true;
  }

  listen(listener: GrantListener): void {
    this.#listeners.set(listener.stored, listener);
  }

  /** The waiter got its lease or gave up: grants to it are no longer read here. */
  forget(listener: GrantListener): void {
    if (this.#listeners.get(listener.stored) === listener) this.#listeners.delete(listener.stored);
  }

  /** A ticket for the next attempt of a wait whose lease lives `ttl`; a find-only one while down. */
  ticket(ttl: number): GrantTicket {
    const window = Math.min(ttl, CLAIM_WINDOW);
    if (!this.#up) {
      this.#subscribe();
      return { channel: '', epoch: 0, window };
    }
    this.#epoch += 1;
    return { channel: this.channel, epoch: this.#epoch, window };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#up = false;
    this.#listeners.clear();
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
        if (this.#up) for (const listener of [...this.#listeners.values()]) listener.onUp();
      },
      down: () => {
        this.#up = false;
      },
    });
  }

  /** "<fence>\n<epoch>\n<stored>": a release granted the name to the waiter with that value. */
  #message(text: string): void {
    const first = text.indexOf('\n');
    const second = text.indexOf('\n', first + 1);
    if (first < 0 || second < 0) return;
    const listener = this.#listeners.get(text.slice(second + 1));
    if (listener === undefined) return;
    let fence: bigint;
    try {
      fence = BigInt(text.slice(0, first));
    } catch {
      return;
    }
    listener.onGrant(fence, Number(text.slice(first + 1, second)));
  }
}
