import { keyFor } from '../engine/context.ts';
import type { Engine } from '../engine/engine.ts';
import { toNumber } from '../engine/replies.ts';
import { ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import { checkAcquireOptions, checkPermits, type SemaphoreAcquireOptions } from '../options/index.ts';
import { loadScript } from '../scripts/index.ts';

const scripts = {
  acquire: loadScript('semaphore-acquire'),
  extend: loadScript('semaphore-extend'),
  release: loadScript('semaphore-release'),
  count: loadScript('semaphore-count'),
};

interface SemaphoreKeys {
  set: string;
  fence: string;
  released: string;
}

/** What one acquisition asks for; kept on the lease for its extensions and release. */
interface PermitRequest {
  limit: number;
  permits: number;
}

/**
 * The semaphore as a spec: permits live in one sorted set per name (`<prefix>:{name}:sem`), one
 * member per permit scored by its expiry in Redis's own clock. Waiters track a release counter
 * rather than the set, so holders' extensions do not wake them; a holder verifies only on a
 * flush or reconnect, since every holder's extension writes the shared set.
 * @internal
 */
export const semaphoreSpec: Spec<SemaphoreKeys, PermitRequest> = {
  operation: 'semaphore acquire',
  keys: (prefix, name) => ({
    set: keyFor(prefix, name, 'sem'),
    fence: keyFor(prefix, name, 'sem:fence'),
    released: keyFor(prefix, name, 'sem:released'),
  }),
  acquire: (k, stored, ttl, { permits, limit }) => ({
    script: scripts.acquire,
    keys: [k.set, k.fence, k.released],
    args: [stored, String(permits), String(limit), ms(ttl)],
  }),
  extend: (k, stored, ttl, { permits }) => ({
    script: scripts.extend,
    keys: [k.set],
    args: [stored, String(permits), ms(ttl)],
  }),
  release: (k, stored, { permits }) => ({
    script: scripts.release,
    keys: [k.set, k.released],
    args: [stored, String(permits)],
  }),
  holding: (k) => ({ key: k.set, policy: 'reset-only', wake: [k.set] }),
  waiting: (k) => ({ key: k.set, watch: [k.released], shared: true }),
};

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
  readonly #engine: Engine;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.semaphore(name, { limit })`. */
  constructor(engine: Engine, name: string, limit: number, defaults: { ttl: number }) {
    this.#engine = engine;
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
      const { request, rest } = this.#requestOf(options);
      return this.#engine.acquire(
        semaphoreSpec,
        this.name,
        request,
        checkAcquireOptions(rest, this.#defaults),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease, or undefined when not enough permits are free. */
  async tryAcquire(
    options?: Omit<SemaphoreAcquireOptions, 'timeout' | 'signal'>,
  ): Promise<Lease | undefined> {
    const { request, rest } = this.#requestOf(options);
    return this.#engine.tryAcquire(
      semaphoreSpec,
      this.name,
      request,
      checkAcquireOptions(rest, this.#defaults),
    );
  }

  /** Permits currently held (unexpired by Redis's clock), by every process. */
  async count(): Promise<number> {
    const k = semaphoreSpec.keys(this.#engine.prefix, this.name);
    const call = { script: scripts.count, keys: [k.set], args: [] };
    return toNumber(await this.#engine.eval(semaphoreSpec, call, 'semaphore count'));
  }

  #requestOf(options: unknown): { request: PermitRequest; rest: Record<string, unknown> } {
    const { permits, rest } = checkPermits(options, this.limit);
    return { request: { permits, limit: this.limit }, rest };
  }
}
