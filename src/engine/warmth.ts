import { monotonic } from '../base/clock.ts';
import type { LowLatency } from '../options/index.ts';

/**
 * The opt-in low-latency mode: while a wait of this instance is younger than `window`, a PING
 * goes to Redis every `interval` ms (one in flight at most), whatever the number of waiters.
 *
 * Why a PING helps at all (measured, docs/low-latency.md): a process that slept for tens of ms runs
 * the same code up to four times slower when it wakes (caches and branch predictors refilled
 * after the machine's other work), so a handoff to an idle waiter takes longer than one to a
 * busy one, even though the grant reaches it by push either way. A PING every few ms keeps
 * the waiting process's socket, client and event loop warm; the grant still comes by push, and the
 * PINGs carry no decision, so safety does not depend on them. Their cost to Redis is bounded:
 * one cheap command per `interval` per waiting process, only during the first `window` of a wait.
 */
export class Warmth {
  readonly #settings: LowLatency;
  readonly #ping: () => Promise<unknown>;
  /** Warm until then (monotonic ms): the youngest wait's start plus the window. */
  #until = Number.NEGATIVE_INFINITY;
  #timer: ReturnType<typeof setInterval> | undefined;
  #inFlight = false;
  /** Waits that have not ended: none left stops the PINGs before the window ends. */
  #waits = 0;

  constructor(settings: LowLatency, ping: () => Promise<unknown>) {
    this.#settings = settings;
    this.#ping = ping;
  }

  /** A wait began; returns its end, which the caller runs exactly once. */
  begin(): () => void {
    this.#waits += 1;
    this.#until = monotonic() + this.#settings.window;
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#tick, this.#settings.interval);
      // PINGs must never keep a process alive that has nothing else to do.
      this.#timer.unref();
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#waits -= 1;
      if (this.#waits === 0) this.stop();
    };
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  readonly #tick = (): void => {
    if (monotonic() >= this.#until) {
      this.stop();
      return;
    }
    if (this.#inFlight) return;
    this.#inFlight = true;
    // A failed PING says nothing a waiter needs: the connection's own handling reports it. Called
    // inside a promise job, so that a driver throwing at once cannot throw out of this timer.
    Promise.resolve()
      .then(this.#ping)
      .then(
        () => {
          this.#inFlight = false;
        },
        () => {
          this.#inFlight = false;
        },
      );
  };
}
