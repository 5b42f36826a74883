import { monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import { ConnectionClosedError, toLeaseholdError, toOutcomes } from '../errors.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import { type AcquireOptions, checkAcquireOptions, checkKnownKeys, checkObject, fail } from '../options.ts';
import { stamp } from '../owner.ts';
import { loadScript } from '../scripts/index.ts';
import type { Attempt } from '../wait-queue.ts';
import type { Keeper } from './keeper.ts';
import { pair, toFence, toNumber } from './replies.ts';

const scripts = {
  acquire: loadScript('semaphore-acquire'),
  extend: loadScript('semaphore-extend'),
  release: loadScript('semaphore-release'),
  count: loadScript('semaphore-count'),
};

/** Options of `lh.semaphore()`. */
export interface SemaphoreOptions {
  /**
   * How many permits exist. Every user of one semaphore name must pass the same limit: it is sent
   * with each acquisition, not stored in Redis.
   * @example lh.semaphore('uploads', { limit: 10 })
   */
  limit: number;
}

/** Options of `semaphore.acquire()`: the usual timeout, signal and ttl, plus how many permits. */
export interface SemaphoreAcquireOptions extends AcquireOptions {
  /**
   * Permits to take at once, all or nothing (1..limit). The lease holds them all; they are
   * extended, released and lost together.
   * @default 1
   */
  permits?: number;
}

const MAX_LIMIT = 100_000;

/** Validates `{ limit }` and returns the limit. */
export function checkSemaphoreOptions(options: unknown): number {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['limit'], 'semaphore options');
  const limit = o['limit'];
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    fail('limit', `an integer from 1 to ${MAX_LIMIT}`, limit);
  }
  return limit;
}

/**
 * Redis side of every semaphore of one Leasehold instance: permits live in one sorted set per
 * name (`<prefix>:{name}:sem`), one member per permit scored by its expiry in Redis's own clock.
 * Waiters track a release counter rather than the set, so holders' extensions do not wake them.
 * @internal
 */
export class SemaphoreCore implements LeaseCore {
  readonly #keeper: Keeper;
  /** Permits per lease (a lease's token names its members `<token>:1..n`). */
  readonly #permits = new WeakMap<Lease, number>();

  constructor(keeper: Keeper) {
    this.#keeper = keeper;
  }

  keys(name: string): { set: string; fence: string; released: string } {
    const { prefix } = this.#keeper.ctx;
    return {
      set: keyFor(prefix, name, 'sem'),
      fence: keyFor(prefix, name, 'sem:fence'),
      released: keyFor(prefix, name, 'sem:released'),
    };
  }

  async attempt(
    name: string,
    limit: number,
    permits: number,
    ttl: number,
    owner: string | undefined,
  ): Promise<Attempt<Lease>> {
    const keys = this.keys(name);
    const token = stamp(owner ?? this.#keeper.ctx.owner);
    const sentAt = monotonic();
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: scripts.acquire,
        keys: [keys.set, keys.fence, keys.released],
        args: [token, String(permits), String(limit), String(Math.ceil(ttl))],
      }),
      'semaphore acquire',
    );
    const [ok, value] = pair(reply, 'semaphore-acquire');
    if (ok !== 1) return { retryIn: this.#keeper.retryIn(toNumber(value), ttl) };
    const lease = this.#keeper.hold(
      { name, stored: token, fencingToken: toFence(value), ttl, sentAt, core: this },
      { key: keys.set, policy: 'reset-only', wake: [keys.set] },
    );
    this.#permits.set(lease, permits);
    return { acquired: lease };
  }

  extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const calls = items.map(({ lease, ttl }) => ({
      script: scripts.extend,
      keys: [this.keys(lease.name).set],
      args: [lease.stored, String(this.#permits.get(lease) ?? 1), String(Math.ceil(ttl))],
    }));
    return this.#keeper.ctx.driver.evalMany(calls).then((results) => toOutcomes(results, 'extend'));
  }

  async release(lease: Lease): Promise<boolean> {
    const keys = this.keys(lease.name);
    const reply = await this.#keeper.ctx.driver
      .eval({
        script: scripts.release,
        keys: [keys.set, keys.released],
        args: [lease.stored, String(this.#permits.get(lease) ?? 1)],
      })
      .catch((error: unknown) => {
        throw toLeaseholdError(error, 'release');
      });
    return reply === 1;
  }

  async count(name: string): Promise<number> {
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({ script: scripts.count, keys: [this.keys(name).set], args: [] }),
      'semaphore count',
    );
    return toNumber(reply);
  }
}

/**
 * A counting semaphore: at most `limit` permits of one name are held at a time, across every
 * process. Each acquisition returns a Lease holding one or more permits; permits of a crashed
 * holder return once their TTL has passed on Redis's clock.
 *
 * @example
 * const uploads = lh.semaphore('uploads', { limit: 10 });
 * await using permit = await uploads.acquire({ timeout: 5_000 });
 * await upload(file, { signal: permit.signal });
 */
export class Semaphore {
  /** The semaphore's name. */
  readonly name: string;
  /** How many permits exist. */
  readonly limit: number;
  readonly #core: SemaphoreCore;
  readonly #keeper: Keeper;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.semaphore(name, { limit })`. */
  constructor(keeper: Keeper, core: SemaphoreCore, name: string, limit: number, defaults: { ttl: number }) {
    this.#keeper = keeper;
    this.#core = core;
    this.name = name;
    this.limit = limit;
    this.#defaults = defaults;
  }

  /**
   * Waits until `permits` permits (default 1) are free and takes them all at once. Rejects with
   * LockTimeoutError after `timeout`, `signal.reason` on abort, ConnectionClosedError on close().
   */
  acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    try {
      const { permits, rest } = this.#permitsOf(options);
      const valid = checkAcquireOptions(rest, this.#defaults);
      const { set, released } = this.#core.keys(this.name);
      const queue = { key: set, watch: [released], shared: true };
      return this.#keeper.wait(this.name, queue, valid, () =>
        this.#core.attempt(this.name, this.limit, permits, valid.ttl, valid.owner),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease, or undefined when not enough permits are free. */
  async tryAcquire(
    options?: Omit<SemaphoreAcquireOptions, 'timeout' | 'signal'>,
  ): Promise<Lease | undefined> {
    const { permits, rest } = this.#permitsOf(options);
    const { ttl, owner } = checkAcquireOptions(rest, this.#defaults);
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const result = await this.#core.attempt(this.name, this.limit, permits, ttl, owner);
    if (!('acquired' in result)) return undefined;
    this.#keeper.ctx.emit('acquired', {
      name: this.name,
      fencingToken: result.acquired.fencingToken,
      waited: 0,
    });
    return result.acquired;
  }

  /** Permits currently held (unexpired by Redis's clock), by every process. */
  count(): Promise<number> {
    return this.#core.count(this.name);
  }

  #permitsOf(options: unknown): { permits: number; rest: Record<string, unknown> } {
    const { permits = 1, ...rest } = checkObject(options, 'options');
    if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1 || permits > this.limit) {
      fail('permits', `an integer from 1 to the limit (${this.limit})`, permits);
    }
    return { permits, rest };
  }
}
