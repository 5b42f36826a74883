import type { Engine } from '../engine/engine.ts';
import { checkName, checkSemaphoreOptions } from '../options/index.ts';
import { Election, ElectionSpec } from './election.ts';
import { FairLock } from './fair.ts';
import { ReadWriteLock } from './rwlock.ts';
import { Semaphore } from './semaphore.ts';

/**
 * The semaphore, read-write lock, fair lock and election of one Leasehold instance: handles on
 * the instance's engine, which runs their specs on one Redis.
 */
export class PrimitiveHandles {
  readonly #engine: Engine;
  readonly #election: ElectionSpec;
  readonly #defaults: { ttl: number };

  constructor(engine: Engine, defaults: { ttl: number }) {
    this.#engine = engine;
    this.#election = new ElectionSpec(engine);
    this.#defaults = defaults;
  }

  semaphore(name: string, options: unknown): Semaphore {
    checkName(name);
    const limit = checkSemaphoreOptions(options);
    return new Semaphore(this.#engine, name, limit, this.#defaults);
  }

  readWriteLock(name: string): ReadWriteLock {
    return new ReadWriteLock(this.#engine, checkName(name), this.#defaults);
  }

  fairLock(name: string): FairLock {
    return new FairLock(this.#engine, checkName(name), this.#defaults);
  }

  election(name: string): Election {
    return new Election(this.#engine, this.#election, checkName(name), this.#defaults);
  }
}
