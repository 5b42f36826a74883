import type { Context } from '../context.ts';
import type { Driver, ScriptCall } from '../driver/types.ts';
import { RedisCommandError, toLeaseholdError, toOutcomes } from '../errors.ts';
import { scripts } from '../scripts/index.ts';
import { confirmDurable, durabilityEpoch } from './durability.ts';
import { toFence } from './replies.ts';

/** The two keys of one mutex: the lock and its fencing counter (same hash tag). */
export interface MutexKeys {
  /** The lock name, for error messages. */
  name: string;
  lock: string;
  fence: string;
}

export type AcquireReply = { fence: bigint } | { pttl: number };

/** One lease to extend: its keys, owner token, ttl, and fencing token (quorum restores it with it). */
export interface ExtendItem {
  lock: string;
  fence: string;
  token: string;
  ttl: number;
  fencingToken: bigint;
}

/**
 * Where the mutex's Redis I/O goes: one Redis (or one Sentinel master / Cluster), or a quorum
 * of independent masters. The Mutex above it owns waiting, bookkeeping and notifications.
 * Every method rejects only with LeaseholdErrors.
 */
export interface MutexBackend {
  /** Changes are pushed: waiters wait for pushes and the holder's TTL instead of polling. */
  readonly tracking: boolean;
  acquire(keys: MutexKeys, token: string, ttl: number): Promise<AcquireReply>;
  force(keys: MutexKeys, token: string, ttl: number): Promise<bigint>;
  /** Per item: true still held (extended), false lost, Error unknown. One round trip per node. */
  extend(items: readonly ExtendItem[]): Promise<(boolean | Error)[]>;
  /** Per item: true when this token still held the lock. */
  release(items: readonly { lock: string; token: string }[]): Promise<(boolean | Error)[]>;
}

/**
 * The mutex on one Redis (standalone, a Sentinel master, or a Cluster's masters), with the
 * optional `durability` WAIT after each acquisition.
 */
export class SingleNodeBackend implements MutexBackend {
  readonly #driver: Driver;

  constructor(ctx: Pick<Context, 'driver'>) {
    this.#driver = ctx.driver;
  }

  get tracking(): boolean {
    return this.#driver.tracking;
  }

  async acquire(keys: MutexKeys, token: string, ttl: number): Promise<AcquireReply> {
    const epoch = durabilityEpoch(this.#driver, keys.lock);
    const reply = await this.#driver.eval(acquireCall(keys, token, ttl)).catch((error: unknown) => {
      throw toLeaseholdError(error, 'acquire');
    });
    const parsed = parseAcquire(reply);
    if ('fence' in parsed) await confirmDurable(this.#driver, keys.name, keys.lock, token, epoch);
    return parsed;
  }

  async force(keys: MutexKeys, token: string, ttl: number): Promise<bigint> {
    const epoch = durabilityEpoch(this.#driver, keys.lock);
    const reply = await this.#driver.eval(forceCall(keys, token, ttl)).catch((error: unknown) => {
      throw toLeaseholdError(error, 'forceAcquire');
    });
    const fence = toFence(reply);
    await confirmDurable(this.#driver, keys.name, keys.lock, token, epoch);
    return fence;
  }

  async extend(items: readonly ExtendItem[]): Promise<(boolean | Error)[]> {
    const results = await this.#driver.evalMany(items.map(extendCall));
    return toOutcomes(results, 'extend');
  }

  async release(items: readonly { lock: string; token: string }[]): Promise<(boolean | Error)[]> {
    const results = await this.#driver.evalMany(items.map(releaseCall));
    return toOutcomes(results, 'release');
  }
}

const ms = (ttl: number) => String(Math.ceil(ttl));

export const acquireCall = (keys: MutexKeys, token: string, ttl: number): ScriptCall => ({
  script: scripts.acquire,
  keys: [keys.lock, keys.fence],
  args: [token, ms(ttl)],
});

export const forceCall = (keys: MutexKeys, token: string, ttl: number): ScriptCall => ({
  script: scripts.force,
  keys: [keys.lock, keys.fence],
  args: [token, ms(ttl)],
});

export const extendCall = (item: { lock: string; token: string; ttl: number }): ScriptCall => ({
  script: scripts.extend,
  keys: [item.lock],
  args: [item.token, ms(item.ttl)],
});

export const releaseCall = (item: { lock: string; token: string }): ScriptCall => ({
  script: scripts.release,
  keys: [item.lock],
  args: [item.token],
});

export function parseAcquire(reply: unknown): AcquireReply {
  if (!Array.isArray(reply) || reply.length !== 2) {
    throw new RedisCommandError(`unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
  }
  const [ok, value] = reply as [unknown, unknown];
  return ok === 1 ? { fence: toFence(value) } : { pttl: Number(value) };
}
