import { keyFor } from '../engine/context.ts';
import type { Engine } from '../engine/engine.ts';
import { pair } from '../engine/replies.ts';
import { ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import { type AcquireOptions, checkAcquireOptions } from '../options/index.ts';
import { loadScript, scripts as mutexScripts } from '../scripts/index.ts';

const scripts = {
  acquire: loadScript('fair-acquire'),
  release: loadScript('fair-release'),
  withdraw: loadScript('fair-withdraw'),
};

interface FairKeys {
  lock: string;
  queue: string;
  deadlines: string;
  arrivals: string;
  fence: string;
  /** Prefix of the per-waiter turn keys; a waiter's stored value completes it. */
  turn: string;
}

/** A reply naming the next waiter in line ('' or nil: nobody), as the turn key to wake. */
function turnOf(k: FairKeys, next: unknown): string | undefined {
  const token = next instanceof Uint8Array ? Buffer.from(next).toString() : next;
  return typeof token === 'string' && token !== '' ? k.turn + token : undefined;
}

/**
 * The fair lock as a spec. Waiters queue in a sorted set by arrival number; each has a deadline
 * (Redis's clock) that its attempts push ahead, and a turn key of its own that only it tracks,
 * so each waiter waits in a local queue of its own. A release writes the turn key of the first
 * waiter in line, so exactly one waiter is woken. The lock key is extended with the mutex's script.
 * @internal
 */
export const fairSpec: Spec<FairKeys, undefined> = {
  operation: 'fair acquire',
  keys: (prefix, name) => ({
    lock: keyFor(prefix, name, 'fair'),
    queue: keyFor(prefix, name, 'fair:queue'),
    deadlines: keyFor(prefix, name, 'fair:deadlines'),
    arrivals: keyFor(prefix, name, 'fair:arrivals'),
    fence: keyFor(prefix, name, 'fair:fence'),
    turn: keyFor(prefix, name, 'fair:turn:'),
  }),
  acquire: (k, stored, ttl, _request, join) => ({
    script: scripts.acquire,
    keys: [k.lock, k.queue, k.deadlines, k.arrivals, k.fence, k.turn + stored],
    args: [stored, ms(ttl), ms(ttl), k.turn, join ? '1' : '0'],
  }),
  extend: (k, stored, ttl) => ({ script: mutexScripts.extend, keys: [k.lock], args: [stored, ms(ttl)] }),
  release: (k, stored) => ({
    script: scripts.release,
    keys: [k.lock, k.queue, k.deadlines],
    args: [stored, k.turn],
  }),
  released: (reply, k) => {
    const [ok, next] = pair(reply, 'fair-release');
    return { held: ok === 1, next: turnOf(k, next) };
  },
  holding: (k) => ({ key: k.lock, policy: 'verify', wake: [] }),
  // Each waiter has its own place in Redis's queue and its own turn key: a queue of its own.
  waiting: (k, _request, stored) => ({ key: k.turn + stored, watch: [k.turn + stored], shared: false }),
  registers: {
    withdraw: (k, stored) => ({
      script: scripts.withdraw,
      keys: [k.lock, k.queue, k.deadlines, k.turn + stored],
      args: [stored, k.turn],
    }),
    // The next waiter may be in this process, which hears no push for its own writes.
    withdrawn: (reply, k) => turnOf(k, reply),
  },
};

/**
 * A fair (FIFO) lock: waiters from every process are served in the order they arrived. A release
 * wakes only the next waiter in line. A waiter that crashed or stalled is skipped once its
 * deadline (one `ttl` after its last sign of life, by Redis's clock) has passed.
 *
 * @example
 * const payouts = lh.fairLock('payouts');
 * await using turn = await payouts.acquire({ timeout: 30_000 });
 * await pay(batch, { fence: turn.fencingToken });
 */
export class FairLock {
  /** The lock's name. */
  readonly name: string;
  readonly #engine: Engine;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.fairLock(name)`. */
  constructor(engine: Engine, name: string, defaults: { ttl: number }) {
    this.#engine = engine;
    this.name = name;
    this.#defaults = defaults;
  }

  /**
   * Joins the queue and waits for this caller's turn. `ttl` is also how long the queue keeps the
   * place of a waiter that stops responding. Rejects with LockTimeoutError after `timeout`,
   * `signal.reason` on abort, ConnectionClosedError on close(); the place in line is given up.
   */
  acquire(options?: AcquireOptions): Promise<Lease> {
    try {
      return this.#engine.acquire(
        fairSpec,
        this.name,
        undefined,
        checkAcquireOptions(options, this.#defaults),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease when the lock is free and nobody waits, else undefined. */
  async tryAcquire(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    return this.#engine.tryAcquire(
      fairSpec,
      this.name,
      undefined,
      checkAcquireOptions(options, this.#defaults),
    );
  }
}
