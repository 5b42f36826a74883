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
  readonly #byKey = new Map<string, Set<KeyListener>>();
  /**
   * Counts pushes as they arrive (before the deferred delivery). An attempt made without a
   * watch compares it before and after: unchanged means no change was pushed in between.
   */
  #pushes = 0;

  get pushes(): number {
    return this.#pushes;
  }

  watch(key: string, listener: KeyListener): () => void {
    let set = this.#byKey.get(key);
    if (set === undefined) {
      set = new Set();
      this.#byKey.set(key, set);
    }
    set.add(listener);
    return () => {
      const current = this.#byKey.get(key);
      if (current === undefined) return;
      current.delete(listener);
      if (current.size === 0) this.#byKey.delete(key);
    };
  }

  /** Keys may have changed; `null` means any key may have. */
  invalidate(keys: readonly string[] | null): void {
    this.#pushes++;
    if (keys === null) {
      this.everything();
      return;
    }
    for (const key of keys) {
      const set = this.#byKey.get(key);
      if (set !== undefined)
        for (const listener of set) this.#pending.set(listener, this.#pending.get(listener) ?? false);
    }
    this.#schedule();
  }

  /** Wakes every listener: after a reconnect or a flush nothing seen before can be trusted. */
  everything(): void {
    this.#pushes++;
    for (const set of this.#byKey.values()) for (const listener of set) this.#pending.set(listener, true);
    this.#schedule();
  }

  // Pushes for one change can arrive from several connections in the same I/O phase (a quorum's
  // nodes, or a key and its fencing counter): each listener hears of them once, right after
  // that phase, instead of once per push. That halves the retries of a quorum's waiters.
  readonly #pending = new Map<KeyListener, boolean>();
  #scheduled = false;

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

  /** Number of watched keys (for leak checks). */
  get size(): number {
    return this.#byKey.size;
  }
}
