import type { Engine } from '../engine/engine.ts';
import type { Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkOnceOptions,
  type OnceOptions,
} from '../options/index.ts';

/**
 * What every primitive's handle shares (`lh.semaphore(name)`, `lh.readWriteLock(name)`, ...): its
 * name, the instance's engine and defaults, and the two ways to ask for a lease, whose options
 * are checked the same way everywhere (a TypeError naming the option, never silently ignored).
 */
export abstract class Handle {
  /** The name this handle locks. */
  readonly name: string;
  readonly #engine: Engine;
  readonly #defaults: { ttl: number };

  /** @internal */
  constructor(engine: Engine, name: string, defaults: { ttl: number }) {
    this.#engine = engine;
    this.name = name;
    this.#defaults = defaults;
  }

  /** @internal The instance's engine, for a handle's other calls (a count, a leader). */
  protected get engine(): Engine {
    return this.#engine;
  }

  /** Waits for `spec`'s lease; bad options reject (never throw synchronously). */
  protected wait<K, R>(spec: Spec<K, R>, request: R, options: AcquireOptions | undefined): Promise<Lease> {
    try {
      return this.#engine.acquire(spec, this.name, request, checkAcquireOptions(options, this.#defaults));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt at `spec`'s lease; `method` names the call in errors about its options. */
  protected async once<K, R>(
    spec: Spec<K, R>,
    request: R,
    options: OnceOptions | undefined,
    method: string,
  ): Promise<Lease | undefined> {
    return this.#engine.tryAcquire(
      spec,
      this.name,
      request,
      checkOnceOptions(options, this.#defaults, method),
    );
  }
}
