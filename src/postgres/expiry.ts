import { monotonic } from '../base/clock.ts';
import { after } from '../base/timer.ts';

/**
 * PostgreSQL has no key expiry, and so no push when a lease's row runs out. Redis pushes an
 * invalidation when a key a client read expires; this is that push, made locally: every key a
 * transaction of this instance read or wrote with a TTL gets one timer at its expiry (the
 * server's clock read in that transaction, mapped onto this process's monotonic clock), which
 * reports the key as changed. Like Redis's tracking, it is one-shot: a change heard from another
 * instance cancels it (whoever still cares reads the key again, which arms a new one). Nothing
 * polls: a waiter learns that a TTL ran out from its own timer.
 */
export class ExpiryTimers {
  readonly #timers = new Map<string, { at: number; cancel: () => void }>();
  readonly #fire: (key: string) => void;

  constructor(fire: (key: string) => void) {
    this.#fire = fire;
  }

  get size(): number {
    return this.#timers.size;
  }

  /** `key` expires in `ms` from now (undefined: no TTL, or gone). */
  watch(key: string, ms: number | undefined): void {
    const old = this.#timers.get(key);
    if (ms === undefined) {
      if (old !== undefined) this.forget(key);
      return;
    }
    // +1: the row is expired once the server's clock has passed expire_at.
    const at = monotonic() + Math.max(0, ms) + 1;
    if (old !== undefined) {
      if (Math.abs(old.at - at) < 1) return;
      old.cancel();
    }
    const cancel = after(at - monotonic(), () => {
      this.#timers.delete(key);
      this.#fire(key);
    });
    this.#timers.set(key, { at, cancel });
  }

  forget(key: string): void {
    this.#timers.get(key)?.cancel();
    this.#timers.delete(key);
  }

  clear(): void {
    for (const { cancel } of this.#timers.values()) cancel();
    this.#timers.clear();
  }
}
