import type { SubscriptionHandlers } from './types.ts';

/**
 * The pause before a SUBSCRIBE that failed on a working connection is sent again, doubled after
 * each failure up to the last. Such a failure is a refusal (an ACL without the channel, until an
 * operator adds it), so no retry storm; a dropped connection instead tries again at its 'ready'.
 */
const FIRST_PAUSE_MS = 1_000;
const LAST_PAUSE_MS = 30_000;

/**
 * Keeps one channel subscribed on a connection that reconnects by itself: SUBSCRIBE at every
 * 'ready' (call `ready()`), and again after a pause when it failed on a working connection. A
 * first SUBSCRIBE that failed (the connection dropped before it was written, a refusal) used to be
 * the last, and the instance went without direct grants for the rest of its life.
 */
export class Resubscribe {
  readonly #subscribe: () => Promise<unknown>;
  readonly #handlers: Pick<SubscriptionHandlers, 'up' | 'down'>;
  readonly #connected: () => boolean;
  #sending = false;
  /** A 'ready' came while a SUBSCRIBE was out: send another once it settles. */
  #again = false;
  #pause = FIRST_PAUSE_MS;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    subscribe: () => Promise<unknown>,
    handlers: Pick<SubscriptionHandlers, 'up' | 'down'>,
    connected: () => boolean,
  ) {
    this.#subscribe = subscribe;
    this.#handlers = handlers;
    this.#connected = connected;
  }

  /** The connection is ready (the first time, or again after a reconnect): subscribe now. */
  ready(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#sending) {
      this.#again = true;
      return;
    }
    this.#sending = true;
    let sent: Promise<unknown>;
    try {
      sent = this.#subscribe();
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      () => this.#settled(true),
      () => this.#settled(false),
    );
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #settled(subscribed: boolean): void {
    this.#sending = false;
    if (this.#closed) return;
    if (this.#again) {
      this.#again = false;
      this.ready();
      return;
    }
    if (subscribed) {
      this.#pause = FIRST_PAUSE_MS;
      this.#handlers.up();
      return;
    }
    this.#handlers.down();
    // Not connected: the next 'ready' sends it. Connected: refused, so try again after a pause.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#connected()) this.ready();
    }, this.#pause);
    this.#timer.unref?.();
    this.#pause = Math.min(this.#pause * 2, LAST_PAUSE_MS);
  }
}
