import { keyFor } from '../engine/context.ts';
import type { Engine } from '../engine/engine.ts';
import { ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import { type AcquireOptions, checkAcquireOptions } from '../options/index.ts';
import { loadScript, scripts as mutexScripts } from '../scripts/index.ts';

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

const rwKeys = (prefix: string, name: string): RwKeys => ({
  writer: keyFor(prefix, name, 'rw:writer'),
  readers: keyFor(prefix, name, 'rw:readers'),
  waiting: keyFor(prefix, name, 'rw:waiting'),
  fence: keyFor(prefix, name, 'rw:fence'),
  released: keyFor(prefix, name, 'rw:released'),
});

const allKeys = (k: RwKeys) => [k.writer, k.readers, k.waiting, k.fence, k.released];

/**
 * A read lease: a member of the readers' sorted set scored by its expiry in Redis's clock, each
 * extended and expiring on its own. Every reader's extension writes that set, so a reader
 * verifies only on a flush or reconnect (see Holding.policy). Readers of one name share a queue.
 * @internal
 */
export const readSpec: Spec<RwKeys, undefined> = {
  operation: 'read lock',
  keys: rwKeys,
  acquire: (k, stored, ttl) => ({ script: scripts.read, keys: allKeys(k), args: [stored, ms(ttl)] }),
  extend: (k, stored, ttl) => ({ script: scripts.readExtend, keys: [k.readers], args: [stored, ms(ttl)] }),
  release: (k, stored) => ({ script: scripts.readRelease, keys: [k.readers, k.released], args: [stored] }),
  holding: (k) => ({ key: k.readers, policy: 'reset-only', wake: [k.readers, k.writer] }),
  waiting: (k) => ({ key: k.readers, watch: [k.writer, k.waiting], shared: true }),
};

/**
 * The write lease: a string key, extended and released with the mutex's own scripts. A waiting
 * writer registers in a second sorted set, which keeps new readers out (writer preference).
 * @internal
 */
export const writeSpec: Spec<RwKeys, undefined> = {
  operation: 'write lock',
  keys: rwKeys,
  acquire: (k, stored, ttl, _request, join) => ({
    script: scripts.write,
    keys: allKeys(k),
    args: [stored, ms(ttl), join ? '1' : '0'],
  }),
  extend: (k, stored, ttl) => ({ script: mutexScripts.extend, keys: [k.writer], args: [stored, ms(ttl)] }),
  release: (k, stored) => ({ script: mutexScripts.release, keys: [k.writer], args: [stored] }),
  holding: (k) => ({ key: k.writer, policy: 'verify', wake: [k.readers, k.writer] }),
  // Each waiting writer's stored value is its registration among the waiting (Spec.registers).
  waiting: (k) => ({ key: k.writer, watch: [k.writer, k.released], shared: false }),
  registers: {
    withdraw: (k, stored) => ({ script: scripts.withdraw, keys: [k.waiting], args: [stored] }),
    // Readers of this process were kept out by the registration: let them try again at once.
    withdrawn: (_reply, k) => k.readers,
  },
};

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
  readonly #engine: Engine;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.readWriteLock(name)`. */
  constructor(engine: Engine, name: string, defaults: { ttl: number }) {
    this.#engine = engine;
    this.name = name;
    this.#defaults = defaults;
  }

  /** Waits for a read lease: no writer holds the lock and none is waiting. */
  read(options?: AcquireOptions): Promise<Lease> {
    return this.#wait(readSpec, options);
  }

  /** Waits for the write lease: no writer and no reader. Blocks new readers while it waits. */
  write(options?: AcquireOptions): Promise<Lease> {
    return this.#wait(writeSpec, options);
  }

  /** One attempt at a read lease; undefined when a writer holds or waits for the lock. */
  async tryRead(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    return this.#engine.tryAcquire(
      readSpec,
      this.name,
      undefined,
      checkAcquireOptions(options, this.#defaults),
    );
  }

  /** One attempt at the write lease; undefined when held. Does not register as waiting. */
  async tryWrite(options?: Pick<AcquireOptions, 'ttl'>): Promise<Lease | undefined> {
    return this.#engine.tryAcquire(
      writeSpec,
      this.name,
      undefined,
      checkAcquireOptions(options, this.#defaults),
    );
  }

  #wait(spec: Spec<RwKeys, undefined>, options: AcquireOptions | undefined): Promise<Lease> {
    try {
      return this.#engine.acquire(spec, this.name, undefined, checkAcquireOptions(options, this.#defaults));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
