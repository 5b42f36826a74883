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
  /** Local wait queues (and other wakers) to wake when this lease ends. Default: `[key]`. */
  wake?: readonly string[];
  /**
   * Runs once when the lease ends, before the wake-ups. One function per primitive, not per
   * lease (it gets the lease): a closure per lease was a tenth of a held lease's memory.
   */
  onEnd?: (lease: Lease) => void;
}

/**
 * The bookkeeping of one held lease, which is also its listener for pushes on its key: one
 * object per lease instead of a record plus closures (memory is a stated target: 10,000 held
 * leases must cost at most 2 KB each).
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
  readonly #onEnd: ((lease: Lease) => void) | undefined;
  readonly #renewer: Renewer;

  constructor(lease: Lease, core: LeaseCore, holding: Holding, renewer: Renewer) {
    this.lease = lease;
    this.key = holding.key;
    this.also = holding.also ?? NONE;
    this.core = core;
    this.#verify = holding.policy === 'verify';
    this.#wake = holding.wake;
    this.#onEnd = holding.onEnd;
    this.#renewer = renewer;
  }

  onChange(everything: boolean): void {
    if (everything || this.#verify) this.#renewer.verifySoon(this.lease);
  }

  ended(): void {
    this.#onEnd?.(this.lease);
  }

  get wake(): readonly string[] {
    return this.#wake ?? [this.key];
  }
}
