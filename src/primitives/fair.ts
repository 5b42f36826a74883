import { monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import {
  ConnectionClosedError,
  LockTimeoutError,
  RedisUnavailableError,
  toLeaseholdError,
  toOutcomes,
} from '../errors.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import { type AcquireOptions, checkAcquireOptions, type ValidAcquireOptions } from '../options.ts';
import { stamp } from '../owner.ts';
import { loadScript, scripts as mutexScripts } from '../scripts/index.ts';
import type { Attempt } from '../wait-queue.ts';
import type { Keeper } from './keeper.ts';
import { pair, toFence, toNumber } from './replies.ts';

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
  /** Prefix of the per-waiter turn keys; a waiter's token completes it. */
  turn: string;
}

/**
 * Redis side of every fair lock of one Leasehold instance. Waiters queue in a sorted set by
 * arrival number; each has a deadline (Redis's clock) that it pushes ahead while it waits, and a
 * turn key of its own that only it tracks. A release writes the turn key of the first waiter in
 * line, so exactly one waiter is woken. The lock key itself is extended with the mutex's script.
 * @internal
 */
export class FairCore implements LeaseCore {
  readonly #keeper: Keeper;

  constructor(keeper: Keeper) {
    this.#keeper = keeper;
  }

  keys(name: string): FairKeys {
    const { prefix } = this.#keeper.ctx;
    return {
      lock: keyFor(prefix, name, 'fair'),
      queue: keyFor(prefix, name, 'fair:queue'),
      deadlines: keyFor(prefix, name, 'fair:deadlines'),
      arrivals: keyFor(prefix, name, 'fair:arrivals'),
      fence: keyFor(prefix, name, 'fair:fence'),
      turn: keyFor(prefix, name, 'fair:turn:'),
    };
  }

  async attempt(name: string, token: string, ttl: number, join: boolean): Promise<Attempt<Lease>> {
    const k = this.keys(name);
    const sentAt = monotonic();
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: scripts.acquire,
        keys: [k.lock, k.queue, k.deadlines, k.arrivals, k.fence, k.turn + token],
        args: [token, String(Math.ceil(ttl)), String(Math.ceil(ttl)), k.turn, join ? '1' : '0'],
      }),
      'fair acquire',
    );
    const [ok, value] = pair(reply, 'fair-acquire');
    if (ok !== 1) {
      // Keep this waiter's deadline fresh: it lapses `ttl` after the last attempt.
      return { retryIn: Math.min(this.#keeper.retryIn(toNumber(value), ttl), ttl / 3) };
    }
    const lease = this.#keeper.hold(
      { name, stored: token, fencingToken: toFence(value), ttl, sentAt, core: this },
      { key: k.lock, policy: 'verify', wake: [] },
    );
    return { acquired: lease };
  }

  extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const calls = items.map(({ lease, ttl }) => ({
      script: mutexScripts.extend,
      keys: [this.keys(lease.name).lock],
      args: [lease.stored, String(Math.ceil(ttl))],
    }));
    return this.#keeper.ctx.driver.evalMany(calls).then((results) => toOutcomes(results, 'extend'));
  }

  async release(lease: Lease): Promise<boolean> {
    const k = this.keys(lease.name);
    const reply = await this.#keeper.ctx.driver
      .eval({ script: scripts.release, keys: [k.lock, k.queue, k.deadlines], args: [lease.stored, k.turn] })
      .catch((error: unknown) => {
        throw toLeaseholdError(error, 'release');
      });
    const [ok, next] = pair(reply, 'fair-release');
    this.#wakeLocal(k, next);
    return ok === 1;
  }

  /** A waiter leaves the queue; the next one is woken if it was first in line. */
  withdraw(name: string, token: string): void {
    const k = this.keys(name);
    const call = this.#keeper.ctx.driver.eval({
      script: scripts.withdraw,
      keys: [k.lock, k.queue, k.deadlines, k.turn + token],
      args: [token, k.turn],
    });
    this.#keeper.track(call).then(
      (next) => this.#wakeLocal(k, next),
      () => {
        // Unreachable Redis: the entry lapses at its deadline.
      },
    );
  }

  /** The next waiter may be in this process, which hears no push for its own writes. */
  #wakeLocal(k: FairKeys, next: unknown): void {
    const token = next instanceof Uint8Array ? Buffer.from(next).toString() : next;
    if (typeof token === 'string' && token !== '') this.#keeper.wake(k.turn + token);
  }
}

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
  readonly #keeper: Keeper;
  readonly #core: FairCore;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.fairLock(name)`. */
  constructor(keeper: Keeper, core: FairCore, name: string, defaults: { ttl: number }) {
    this.#keeper = keeper;
    this.#core = core;
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
      return this.#wait(checkAcquireOptions(options, this.#defaults));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease when the lock is free and nobody waits, else undefined. */
  async tryAcquire(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    const { ttl, owner } = checkAcquireOptions(options, this.#defaults);
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const result = await this.#core.attempt(this.name, stamp(owner ?? this.#keeper.ctx.owner), ttl, false);
    if (!('acquired' in result)) return undefined;
    this.#keeper.ctx.emit('acquired', {
      name: this.name,
      fencingToken: result.acquired.fencingToken,
      waited: 0,
    });
    return result.acquired;
  }

  // Each waiter has its own place in Redis's queue, so waiters do not share one attempt as
  // mutex waiters do; each runs this small loop: attempt, then sleep until its turn key changes,
  // its own timer fires (deadline refresh, holder's TTL) or it gives up.
  #wait({ timeout, signal, ttl, owner }: ValidAcquireOptions): Promise<Lease> {
    const keeper = this.#keeper;
    if (keeper.ctx.closed) return Promise.reject(new ConnectionClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    const name = this.name;
    // One value for the whole wait: it is this waiter's place in the queue, and its `since`
    // is when it joined.
    const token = stamp(owner ?? keeper.ctx.owner);
    const turnKey = this.#core.keys(name).turn + token;
    const startedAt = monotonic();
    return new Promise<Lease>((resolve, reject) => {
      let settled = false;
      let inFlight = false;
      let dirty = false;
      let joined = false;
      /** Redis unreachable at the last attempt: a timeout then says so. */
      let unreachable: RedisUnavailableError | undefined;
      let retry: NodeJS.Timeout | undefined;
      let deadline: NodeJS.Timeout | undefined;
      const wake = () => {
        if (settled) return;
        if (inFlight) dirty = true;
        else void run();
      };
      const unwatch = keeper.ctx.dispatcher.watch(turnKey, { onChange: wake });
      const unwake = keeper.onWake(turnKey, wake);
      const unclose = keeper.onClose(() => giveUp(new ConnectionClosedError()));
      const onAbort = () => giveUp(signal?.reason);
      const cleanup = () => {
        settled = true;
        clearTimeout(retry);
        clearTimeout(deadline);
        unwatch();
        unwake();
        unclose();
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (error: unknown) => {
        if (settled) return;
        cleanup();
        if (joined) this.#core.withdraw(name, token);
        reject(error);
      };
      const run = async () => {
        clearTimeout(retry);
        inFlight = true;
        dirty = false;
        let result: Attempt<Lease>;
        try {
          joined = joined || timeout !== 0;
          result = await this.#core.attempt(name, token, ttl, timeout !== 0);
          unreachable = undefined;
        } catch (error) {
          inFlight = false;
          if (error instanceof RedisUnavailableError && !settled) {
            unreachable = error;
            retry = setTimeout(wake, keeper.ctx.retryDelay);
            retry.unref();
          } else giveUp(error);
          return;
        }
        inFlight = false;
        if ('acquired' in result) {
          if (settled) {
            void result.acquired.release().catch(() => {});
            return;
          }
          cleanup();
          keeper.ctx.emit('acquired', {
            name,
            fencingToken: result.acquired.fencingToken,
            waited: monotonic() - startedAt,
          });
          resolve(result.acquired);
          return;
        }
        if (settled) return;
        if (timeout === 0) return giveUp(new LockTimeoutError(name, timeout));
        if (dirty) return void run();
        retry = setTimeout(wake, result.retryIn);
        retry.unref();
      };
      if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) {
        deadline = setTimeout(() => giveUp(new LockTimeoutError(name, timeout, unreachable)), timeout);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      void run();
    });
  }
}
