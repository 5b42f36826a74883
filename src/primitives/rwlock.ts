import { monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import type { ScriptCall } from '../driver/types.ts';
import { ConnectionClosedError, toLeaseholdError, toOutcomes } from '../errors.ts';
import type { Lease, LeaseCore } from '../lease.ts';
import { type AcquireOptions, checkAcquireOptions } from '../options.ts';
import { stamp } from '../owner.ts';
import { loadScript, scripts as mutexScripts, type Script } from '../scripts/index.ts';
import type { Attempt } from '../wait-queue.ts';
import type { Keeper } from './keeper.ts';
import { pair, toFence, toNumber } from './replies.ts';

const scripts = {
  read: loadScript('rwlock-read'),
  write: loadScript('rwlock-write'),
  withdraw: loadScript('rwlock-withdraw'),
  readExtend: loadScript('rwlock-read-extend'),
  readRelease: loadScript('rwlock-read-release'),
};

interface RwKeys {
  writer: string;
  readers: string;
  waiting: string;
  fence: string;
  released: string;
}

/**
 * Redis side of every read-write lock of one Leasehold instance. The writer holds a string key
 * (extended and released with the mutex's own scripts); readers are members of a sorted set
 * scored by expiry in Redis's clock, each extended and expiring on its own; waiting writers
 * register in a second sorted set, which keeps new readers out (writer preference).
 * @internal
 */
export class RwLockCore {
  readonly #keeper: Keeper;
  readonly readCore: LeaseCore;
  readonly writeCore: LeaseCore;

  constructor(keeper: Keeper) {
    this.#keeper = keeper;
    this.readCore = {
      extendMany: (items) =>
        this.#many(
          items.map(({ lease, ttl }) => ({
            script: scripts.readExtend,
            keys: [this.keys(lease.name).readers],
            args: [lease.stored, String(Math.ceil(ttl))],
          })),
        ),
      release: (lease) => {
        const k = this.keys(lease.name);
        return this.#one(scripts.readRelease, [k.readers, k.released], [lease.stored]);
      },
    };
    this.writeCore = {
      extendMany: (items) =>
        this.#many(
          items.map(({ lease, ttl }) => ({
            script: mutexScripts.extend,
            keys: [this.keys(lease.name).writer],
            args: [lease.stored, String(Math.ceil(ttl))],
          })),
        ),
      release: (lease) => this.#one(mutexScripts.release, [this.keys(lease.name).writer], [lease.stored]),
    };
  }

  keys(name: string): RwKeys {
    const { prefix } = this.#keeper.ctx;
    return {
      writer: keyFor(prefix, name, 'rw:writer'),
      readers: keyFor(prefix, name, 'rw:readers'),
      waiting: keyFor(prefix, name, 'rw:waiting'),
      fence: keyFor(prefix, name, 'rw:fence'),
      released: keyFor(prefix, name, 'rw:released'),
    };
  }

  async attempt(
    mode: 'read' | 'write',
    name: string,
    token: string,
    ttl: number,
    register: boolean,
  ): Promise<Attempt<Lease>> {
    const k = this.keys(name);
    const sentAt = monotonic();
    const args = [token, String(Math.ceil(ttl))];
    if (mode === 'write') args.push(register ? '1' : '0');
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: mode === 'read' ? scripts.read : scripts.write,
        keys: [k.writer, k.readers, k.waiting, k.fence, k.released],
        args,
      }),
      `${mode} lock`,
    );
    const [ok, value] = pair(reply, `rwlock-${mode}`);
    if (ok !== 1) {
      const hint = toNumber(value);
      // A waiting writer's registration lapses after `ttl`: refresh it well before that.
      return { retryIn: this.#keeper.retryIn(mode === 'write' ? Math.min(hint, ttl / 3) : hint, ttl) };
    }
    const lease = this.#keeper.hold(
      {
        name,
        stored: token,
        fencingToken: toFence(value),
        ttl,
        sentAt,
        core: mode === 'read' ? this.readCore : this.writeCore,
      },
      {
        key: mode === 'read' ? k.readers : k.writer,
        // Readers share one sorted set that every reader's extension writes: see Holding.policy.
        policy: mode === 'read' ? 'reset-only' : 'verify',
        wake: [k.readers, k.writer],
      },
    );
    return { acquired: lease };
  }

  /** A waiting writer gave up: let readers in again (here at once, elsewhere through the push). */
  withdraw(name: string, token: string): void {
    const k = this.keys(name);
    const done = this.#keeper
      .track(this.#keeper.ctx.driver.eval({ script: scripts.withdraw, keys: [k.waiting], args: [token] }))
      .catch(() => {
        // Unreachable Redis: the registration lapses at its deadline.
      });
    void done.then(() => this.#keeper.wake(k.readers));
  }

  #many(calls: ScriptCall[]): Promise<(boolean | Error)[]> {
    return this.#keeper.ctx.driver.evalMany(calls).then((results) => toOutcomes(results, 'extend'));
  }

  async #one(script: Script, keys: string[], args: string[]): Promise<boolean> {
    const reply = await this.#keeper.ctx.driver.eval({ script, keys, args }).catch((error: unknown) => {
      throw toLeaseholdError(error, 'release');
    });
    return reply === 1;
  }
}

/**
 * A read-write lock: many readers or one writer. Writer-preferring: once a writer waits, new
 * readers wait behind it, so a stream of readers cannot starve writers. Each reader's lease
 * extends and expires on its own.
 *
 * @example
 * const config = lh.readWriteLock('config');
 * {
 *   await using r = await config.read();
 *   use(await load());
 * }
 * await using w = await config.write({ timeout: 5_000 });
 * await save(next, { fence: w.fencingToken });
 */
export class ReadWriteLock {
  /** The lock's name. */
  readonly name: string;
  readonly #keeper: Keeper;
  readonly #core: RwLockCore;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.readWriteLock(name)`. */
  constructor(keeper: Keeper, core: RwLockCore, name: string, defaults: { ttl: number }) {
    this.#keeper = keeper;
    this.#core = core;
    this.name = name;
    this.#defaults = defaults;
  }

  /** Waits for a read lease: no writer holds the lock and none is waiting. */
  read(options?: AcquireOptions): Promise<Lease> {
    return this.#wait('read', options);
  }

  /** Waits for the write lease: no writer and no reader. Blocks new readers while it waits. */
  write(options?: AcquireOptions): Promise<Lease> {
    return this.#wait('write', options);
  }

  /** One attempt at a read lease; undefined when a writer holds or waits for the lock. */
  tryRead(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    return this.#try('read', options);
  }

  /** One attempt at the write lease; undefined when held. Does not register as waiting. */
  tryWrite(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    return this.#try('write', options);
  }

  #wait(mode: 'read' | 'write', options: AcquireOptions | undefined): Promise<Lease> {
    try {
      const valid = checkAcquireOptions(options, this.#defaults);
      const k = this.#core.keys(this.name);
      if (mode === 'read') {
        const queue = { key: k.readers, watch: [k.writer, k.waiting], shared: true };
        return this.#keeper.wait(this.name, queue, valid, () =>
          this.#core.attempt('read', this.name, this.#stamp(valid.owner), valid.ttl, false),
        );
      }
      // One token for the whole wait: it is this writer's registration among the waiting.
      const token = this.#stamp(valid.owner);
      let registered = false;
      return this.#keeper.wait(
        this.name,
        { key: k.writer, watch: [k.writer, k.released], shared: false },
        valid,
        () => {
          registered = valid.timeout !== 0;
          return this.#core.attempt('write', this.name, token, valid.ttl, registered);
        },
        () => {
          if (registered) this.#core.withdraw(this.name, token);
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #try(mode: 'read' | 'write', options: unknown): Promise<Lease | undefined> {
    const { ttl, owner } = checkAcquireOptions(options, this.#defaults);
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const result = await this.#core.attempt(mode, this.name, this.#stamp(owner), ttl, false);
    if (!('acquired' in result)) return undefined;
    this.#keeper.ctx.emit('acquired', {
      name: this.name,
      fencingToken: result.acquired.fencingToken,
      waited: 0,
    });
    return result.acquired;
  }

  /** A stored value: a fresh token stamped with the owner (src/owner.ts). */
  #stamp(owner: string | undefined): string {
    return stamp(owner ?? this.#keeper.ctx.owner);
  }
}
