import { monotonic } from '../base/clock.ts';

/** Keys whose last push time is remembered (see changedSince); the oldest go first. */
const RECENT_KEYS = 10_000;

const NO_LISTENERS: readonly KeyListener[] = [];

/** Something that wants to hear when a key may have changed. */
export interface KeyListener {
  /** `everything` is true for a null push (FLUSHALL) or a reconnect: re-check, do not trust. */
  onChange(everything: boolean): void;
}

/**
 * Routes invalidation pushes to the waiters and holders interested in a key. Pushes are hints:
 * a listener re-runs a compare script, so a spurious or duplicated push costs one round trip
 * and a missed one is covered by the listener's own timer.
 */
export class Dispatcher {
  /** One listener per key is the common case (a held lease): no Set for it. */
  readonly #byKey = new Map<string, KeyListener | Set<KeyListener>>();
  /**
   * Counts pushes as they arrive (before the deferred delivery). An attempt made without a
   * watch compares it before and after: unchanged means no change was pushed in between.
   */
  #pushes = 0;
  /** When each recently pushed key was last pushed (monotonic ms), in push order. */
  readonly #recent = new Map<string, number>();
  /** Pushes before this time may have been forgotten (evicted, or a null push / reset). */
  #forgottenBefore = Number.NEGATIVE_INFINITY;

  get pushes(): number {
    return this.#pushes;
  }

  /** Listens to `key`; returns the removal. */
  watch(key: string, listener: KeyListener): () => void {
    this.add(key, listener);
    return () => this.remove(key, listener);
  }

  add(key: string, listener: KeyListener): void {
    const current = this.#byKey.get(key);
    if (current === undefined) this.#byKey.set(key, listener);
    else if (current instanceof Set) current.add(listener);
    else if (current !== listener) this.#byKey.set(key, new Set([current, listener]));
  }

  remove(key: string, listener: KeyListener): void {
    const current = this.#byKey.get(key);
    if (current === listener) this.#byKey.delete(key);
    else if (current instanceof Set) {
      current.delete(listener);
      if (current.size === 0) this.#byKey.delete(key);
    }
  }

  /** The listeners of `key` right now, as a copy (a caller may remove some while it goes). */
  listenersOf(key: string): readonly KeyListener[] {
    const found = this.#byKey.get(key);
    if (found === undefined) return NO_LISTENERS;
    return found instanceof Set ? [...found] : [found];
  }

  /** Keys may have changed; `null` means any key may have. */
  invalidate(keys: readonly string[] | null): void {
    this.#pushes++;
    if (keys === null) {
      this.everything();
      return;
    }
    this.#remember(keys);
    for (const key of keys) {
      const found = this.#byKey.get(key);
      if (found === undefined) continue;
      if (found instanceof Set) for (const listener of found) this.#mark(listener, false);
      else this.#mark(found, false);
    }
    this.#schedule();
  }

  /** Wakes every listener: after a reconnect or a flush nothing seen before can be trusted. */
  everything(): void {
    this.#pushes++;
    this.#forgottenBefore = monotonic();
    this.#recent.clear();
    for (const found of this.#byKey.values()) {
      if (found instanceof Set) for (const listener of found) this.#mark(listener, true);
      else this.#mark(found, true);
    }
    this.#schedule();
  }

  // Pushes for one change can arrive from several connections in the same I/O phase (a quorum's
  // nodes, or a key and its fencing counter): each listener hears of them once, right after
  // that phase, instead of once per push: a quorum's waiters retry once per change, not once per node.
  readonly #pending = new Map<KeyListener, boolean>();
  #scheduled = false;

  #mark(listener: KeyListener, everything: boolean): void {
    this.#pending.set(listener, everything || (this.#pending.get(listener) ?? false));
  }

  #schedule(): void {
    if (this.#scheduled || this.#pending.size === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const due = [...this.#pending];
      this.#pending.clear();
      for (const [listener, everything] of due) listener.onChange(everything);
    });
  }

  /**
   * Whether a push for `key` (or a flush, or a reconnect) may have arrived since `since`
   * (monotonic ms). A push can overtake the reply of the script that armed the key: on a
   * REDIRECT connection always may, and even on one connection a push parsed in the same chunk
   * is handled before the reply's continuation. A lease registered after that push would never
   * hear of it; the engine's registry asks this when it registers one and re-verifies if so.
   */
  changedSince(key: string, since: number): boolean {
    if (since <= this.#forgottenBefore) return true;
    const at = this.#recent.get(key);
    return at !== undefined && at >= since;
  }

  #remember(keys: readonly string[]): void {
    const now = monotonic();
    for (const key of keys) {
      this.#recent.delete(key);
      this.#recent.set(key, now);
    }
    if (this.#recent.size <= RECENT_KEYS) return;
    for (const [key, at] of this.#recent) {
      this.#recent.delete(key);
      this.#forgottenBefore = at;
      if (this.#recent.size <= RECENT_KEYS * 0.9) break;
    }
  }

  /** Number of watched keys (for leak checks). */
  get size(): number {
    return this.#byKey.size;
  }
}
