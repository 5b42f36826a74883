import type { Lease, LeaseCore } from '../lease.ts';
import type { KeyListener } from '../notify/dispatcher.ts';
import type { Renewer } from './renewer.ts';

/** How a held lease reacts to a push on its watched key. */
export interface Holding {
  /** The key whose invalidation may mean the lease is gone. */
  key: string;
  /** More keys the lease holds (a multiLock holds one per name), watched like `key`. */
  also?: readonly string[];
  /**
   * 'verify': any push re-verifies (single-holder keys). 'reset-only': only a flush or reconnect
   * does, because the key is shared by several holders whose extensions write it: verifying on
   * those pushes would make holders wake each other forever.
   */
  policy: 'verify' | 'reset-only';
  /**
   * Keys that no other lease can hold while this one is granted: this process's own leases on
   * them end the moment it is granted (a forceAcquire, a multiLock over a mutex's name, a writer
   * over a reader whose membership had expired). Redis sends no push for this process's own
   * writes (NOLOOP), so without this one process could hold a name twice until its next
   * extension. Default: `key` and `also` for 'verify' (single-holder keys), none for
   * 'reset-only' (keys several holders share).
   */
  excludes?: readonly string[];
  /** Local wait queues (and other wakers) to wake when this lease ends. Default: `[key]`. */
  wake?: readonly string[];
}

/**
 * The bookkeeping of one held lease, which is also its listener for pushes on its key: one
 * object per lease instead of a record plus closures: memory per held lease is a stated target
 * (docs/benchmarks.md).
 */
const NONE: readonly string[] = [];

export class Held implements KeyListener {
  readonly lease: Lease;
  readonly key: string;
  /** Holding.also: the lease's other keys (a shared empty array for the one-key primitives). */
  readonly also: readonly string[];
  readonly core: LeaseCore;
  readonly #verify: boolean;
  readonly #wake: readonly string[] | undefined;
  readonly #renewer: Renewer;

  constructor(lease: Lease, core: LeaseCore, holding: Holding, renewer: Renewer) {
    this.lease = lease;
    this.key = holding.key;
    this.also = holding.also ?? NONE;
    this.core = core;
    this.#verify = holding.policy === 'verify';
    this.#wake = holding.wake;
    this.#renewer = renewer;
  }

  /** Holding.excludes, resolved. */
  excludes(holding: Holding): readonly string[] {
    if (holding.excludes !== undefined) return holding.excludes;
    return this.#verify ? (this.also.length === 0 ? [this.key] : [this.key, ...this.also]) : NONE;
  }

  onChange(everything: boolean): void {
    if (everything || this.#verify) this.#renewer.verifySoon(this.lease);
  }

  get wake(): readonly string[] {
    return this.#wake ?? [this.key];
  }
}
