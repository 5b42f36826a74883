import type { Driver, Subscription, SubscriptionHandlers } from './types.ts';

/**
 * One channel subscribed on every master of a Cluster (or on a Sentinel set's current master,
 * moved on a switch), for direct grants. A release's PUBLISH
 * (src/scripts/includes/grant.lua) counts only the subscribers of the node it runs on, and a
 * count of 0 undoes the grant: the waiter's instance must listen on the very master that serves
 * its lock's slot, so it listens on all of them. Redis also carries every message to every other
 * node, so a grant arrives once per master, and a grant undone on its own node (no subscriber
 * there yet: a new master after a failover) still arrives through the others: messages are
 * therefore hints (the waiter attempts, and finds the grant in Redis if it stands), never leases. Up only while every master's
 * subscription is up: a ticket taken while one is down would register a waiter that a release
 * on that master cannot reach (safe, the grant is undone, but the waiter drops out of line).
 */
export class FanOut implements Subscription {
  /** A message may come from a node whose release undid its grant (see Subscription.hints). */
  readonly hints = true;
  readonly #channel: string;
  readonly #handlers: SubscriptionHandlers;
  readonly #per = new Map<Driver, { sub: Subscription | undefined; up: boolean }>();
  /** Tells the driver that made it to forget it (close()). */
  readonly #onClose: (fanOut: FanOut) => void;
  #announced = false;
  #closed = false;

  constructor(channel: string, handlers: SubscriptionHandlers, onClose: (fanOut: FanOut) => void) {
    this.#channel = channel;
    this.#handlers = handlers;
    this.#onClose = onClose;
  }

  /** A master joined (or is known at subscribe time): subscribe on it once its driver is connected. */
  add(driver: Driver, connected: Promise<void>): void {
    if (this.#closed || this.#per.has(driver) || driver.subscribe === undefined) return;
    const state: { sub: Subscription | undefined; up: boolean } = { sub: undefined, up: false };
    this.#per.set(driver, state);
    this.#settle();
    connected.then(
      () => {
        if (this.#closed || this.#per.get(driver) !== state) return;
        state.sub = driver.subscribe?.(this.#channel, {
          message: (text) => {
            if (!this.#closed) this.#handlers.message(text);
          },
          up: () => {
            state.up = true;
            this.#settle();
          },
          down: () => {
            state.up = false;
            this.#settle();
          },
        });
      },
      () => {
        // Never connected: the Cluster driver drops it with its next slot map; until then, down.
      },
    );
  }

  /** A master left the slot map (its driver is closed, and its subscription with it). */
  remove(driver: Driver): void {
    const state = this.#per.get(driver);
    if (state === undefined) return;
    this.#per.delete(driver);
    void state.sub?.close().catch(() => {});
    this.#settle();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#onClose(this);
    const subs = [...this.#per.values()].map((state) => state.sub);
    this.#per.clear();
    await Promise.all(subs.map((sub) => sub?.close().catch(() => {})));
  }

  #settle(): void {
    if (this.#closed) return;
    const all = this.#per.size > 0 && [...this.#per.values()].every((state) => state.up);
    if (all === this.#announced) return;
    this.#announced = all;
    if (all) this.#handlers.up();
    else this.#handlers.down();
  }
}
