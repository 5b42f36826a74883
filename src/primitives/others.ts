import { checkName } from '../options.ts';
import { Election, ElectionCore } from './election.ts';
import { FairCore, FairLock } from './fair.ts';
import type { Keeper } from './keeper.ts';
import { ReadWriteLock, RwLockCore } from './rwlock.ts';
import { checkSemaphoreOptions, Semaphore, SemaphoreCore } from './semaphore.ts';

/**
 * The semaphore, read-write lock, fair lock and election of one Leasehold instance: one Keeper
 * (wait queues, held leases, close) shared by the four, and a Redis core per kind.
 * @internal
 */
export class OtherPrimitives {
  readonly #keeper: Keeper;
  readonly #semaphore: SemaphoreCore;
  readonly #rwlock: RwLockCore;
  readonly #fair: FairCore;
  readonly #election: ElectionCore;

  constructor(keeper: Keeper) {
    this.#keeper = keeper;
    this.#semaphore = new SemaphoreCore(this.#keeper);
    this.#rwlock = new RwLockCore(this.#keeper);
    this.#fair = new FairCore(this.#keeper);
    this.#election = new ElectionCore(this.#keeper);
  }

  semaphore(name: string, options: unknown): Semaphore {
    checkName(name);
    const limit = checkSemaphoreOptions(options);
    return new Semaphore(this.#keeper, this.#semaphore, name, limit, this.#defaults());
  }

  readWriteLock(name: string): ReadWriteLock {
    return new ReadWriteLock(this.#keeper, this.#rwlock, checkName(name), this.#defaults());
  }

  fairLock(name: string): FairLock {
    return new FairLock(this.#keeper, this.#fair, checkName(name), this.#defaults());
  }

  election(name: string): Election {
    return new Election(this.#keeper, this.#election, checkName(name), this.#defaults());
  }

  #defaults(): { ttl: number } {
    return { ttl: this.#keeper.ctx.ttl };
  }
}
