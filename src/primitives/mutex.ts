import { drift, monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import { ConnectionClosedError } from '../errors.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import type { ValidAcquireOptions } from '../options.ts';
import { stamp } from '../owner.ts';
import type { Attempt } from '../wait-queue.ts';
import type { Keeper } from './keeper.ts';
import type { MutexBackend, MutexKeys } from './mutex-backend.ts';

/**
 * The mutex of one Leasehold instance, for every lock name. Waiting, renewal and notification
 * bookkeeping live in the Keeper it shares with the other primitives; the Redis I/O lives in a
 * MutexBackend (one Redis, or a quorum of masters).
 */
export class Mutex implements LeaseCore {
  readonly #keeper: Keeper;
  readonly #backend: MutexBackend;
  /** The lease this instance holds per lock name: a local forceAcquire ends it without a push. */
  readonly #held = new Map<string, Lease>();

  constructor(keeper: Keeper, backend: MutexBackend) {
    this.#keeper = keeper;
    this.#backend = backend;
  }

  acquire(name: string, options: ValidAcquireOptions): Promise<Lease> {
    const { lock } = this.#keys(name);
    return this.#keeper.wait(name, { key: lock, watch: [lock], shared: false }, options, () =>
      this.#attempt(name, options.ttl, options.owner),
    );
  }

  /** One attempt; undefined when someone else holds the lock. */
  async tryAcquire(name: string, ttl: number, owner?: string): Promise<Lease | undefined> {
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const result = await this.#attempt(name, ttl, owner);
    if (!('acquired' in result)) return undefined;
    this.#keeper.ctx.emit('acquired', { name, fencingToken: result.acquired.fencingToken, waited: 0 });
    return result.acquired;
  }

  /** Takes the lock whoever holds it; the previous holder's signal aborts at once. */
  async forceAcquire(name: string, ttl: number, owner?: string): Promise<Lease> {
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const keys = this.#keys(name);
    const token = stamp(owner ?? this.#keeper.ctx.owner);
    const sentAt = monotonic();
    const fence = await this.#keeper.track(this.#backend.force(keys, token, ttl));
    const lease = this.#hold(name, keys, token, fence, ttl, sentAt);
    this.#keeper.ctx.emit('acquired', { name, fencingToken: lease.fencingToken, waited: 0 });
    return lease;
  }

  extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    return this.#backend.extend(
      items.map(({ lease, ttl }) => {
        const { lock, fence } = this.#keys(lease.name);
        return { lock, fence, token: lease.stored, ttl, fencingToken: lease.fencingToken };
      }),
    );
  }

  async release(lease: Lease): Promise<boolean> {
    const [result] = await this.#backend.release([
      { lock: this.#keys(lease.name).lock, token: lease.stored },
    ]);
    if (result instanceof Error) throw result;
    return result === true;
  }

  async #attempt(name: string, ttl: number, owner: string | undefined): Promise<Attempt<Lease>> {
    const keys = this.#keys(name);
    // The stored value: the random token plus who and since when (src/owner.ts).
    const token = stamp(owner ?? this.#keeper.ctx.owner);
    const sentAt = monotonic();
    let reply: Awaited<ReturnType<MutexBackend['acquire']>>;
    try {
      reply = await this.#keeper.track(this.#backend.acquire(keys, token, ttl));
    } catch (error) {
      if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
      throw error;
    }
    if ('fence' in reply) {
      // The reply came so late that the lease's validity already ran out (a stalled event loop,
      // a slow network): handing it out would give the caller a lease that is lost on arrival.
      // Give the key back and try again after retryDelay: whatever slowed this reply is likely
      // to slow the next one, and retrying at once would spin on Redis.
      if (monotonic() >= sentAt + ttl - drift(ttl)) {
        void this.#keeper.track(this.#backend.release([{ lock: keys.lock, token }])).catch(() => {});
        return { retryIn: this.#keeper.ctx.retryDelay };
      }
      return { acquired: this.#hold(name, keys, token, reply.fence, ttl, sentAt) };
    }
    // The key outlives its TTL only until someone touches it, and Redis's own expiry push can
    // lag by seconds on a busy server: retry at the holder's remaining TTL ourselves.
    return { retryIn: this.#keeper.retryIn(reply.pttl, ttl, this.#backend.tracking) };
  }

  #hold(
    name: string,
    keys: MutexKeys,
    token: string,
    fencingToken: bigint,
    ttl: number,
    sentAt: number,
  ): Lease {
    const lease = this.#keeper.hold(
      { name, stored: token, fencingToken, ttl, sentAt, core: this },
      { key: keys.lock, policy: 'verify', onEnd: this.#ended },
    );
    const previous = this.#held.get(name);
    this.#held.set(name, lease);
    previous?.lose('taken', 'taken over by forceAcquire in this process');
    return lease;
  }

  /** A lease ended: forget it (shared by every lease, so that none carries a closure). */
  readonly #ended = (lease: Lease): void => {
    if (this.#held.get(lease.name) === lease) this.#held.delete(lease.name);
  };

  #keys(name: string): MutexKeys {
    const prefix = this.#keeper.ctx.prefix;
    return { name, lock: keyFor(prefix, name), fence: keyFor(prefix, name, 'fence') };
  }
}
