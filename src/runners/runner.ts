import type { Driver, ScriptCall } from '../driver/types.ts';
import { QuorumError } from '../errors.ts';
import { confirmDurable, durabilityEpoch } from './durability.ts';
import { toLeaseholdError, toOutcomes } from './failures.ts';

/**
 * An acquisition's verdict: granted with a fencing token (and one per key, for a lease on several
 * keys), or busy with a retry hint (a PTTL) and, where it matters, the key that was busy.
 */
export type Grant = Granted | Busy;
export interface Granted {
  fence: bigint;
  /** One fencing token per key, in the spec's key order (a multiLock's names). */
  fences?: readonly bigint[];
  /**
   * Direct grants: a release had granted the lock to this waiter before the attempt arrived; the
   * grant's record named attempt `epoch`, whose send time bounds the lease's validity.
   */
  epoch?: number;
}
export interface Busy {
  hint: number;
  /** The key that was held (a multiLock waits for that name's release only). */
  blocking?: string;
}

/** One acquire script call and what a runner needs around it. */
export interface AcquireOp {
  /** For error messages: 'acquire', 'semaphore acquire', ... */
  operation: string;
  /** The lock name, for DurabilityError. */
  name: string;
  /** The key the acquisition writes (durability's WAIT is taken on the connection serving it). */
  key: string;
  /** The lease's ttl: a quorum stops waiting for replicas after half of it. */
  ttl: number;
  call: ScriptCall;
  parse(reply: unknown): Grant;
  /**
   * The calls that give the keys back: after a failed WAIT, on a quorum's nodes when no majority
   * granted, or when the reply never came. A method, so that the common path never builds it.
   */
  release(): ScriptCall | readonly ScriptCall[];
  /**
   * Quorum: the call that raises each node's counter to the fencing token handed out
   * (fence-raise.lua); undefined for a spec without quorum support.
   */
  confirm(fence: bigint): ScriptCall | undefined;
}

/** One lease to extend; `restore` puts it back on a quorum node that lost it (quorum-restore.lua). */
export interface ExtendOp {
  call: ScriptCall;
  ttl: number;
  restore?: ScriptCall;
}

/**
 * Where the engine's script calls go: one Redis (standalone, a Sentinel master, a Cluster), or a
 * quorum of replicas (independent masters, or N keys of one name on one Cluster's shards). The
 * primitives build ScriptCalls; only runners touch a driver. Every method rejects only with
 * LeaseholdErrors.
 */
export interface Runner {
  /** Changes are pushed: waiters wait for pushes and the holder's TTL instead of polling. */
  readonly tracking: boolean;
  /** More than one replica decides (quorum): only primitives that support it may use this runner. */
  readonly replicated: boolean;
  acquire(op: AcquireOp): Promise<Grant>;
  /** Per op: true still held (extended), false lost, Error unknown. One round trip per replica. */
  extend(ops: readonly ExtendOp[]): Promise<(boolean | Error)[]>;
  /** Compare-and-delete calls; per call: true when this holder still held it. */
  release(calls: readonly ScriptCall[]): Promise<(boolean | Error)[]>;
  /** One call's raw reply, or `read` of it (one Redis only: the replicated runners refuse). */
  eval(call: ScriptCall, operation: string): Promise<unknown>;
  eval<T>(call: ScriptCall, operation: string, read: (reply: unknown) => T): Promise<T>;
  /** A plain command's raw reply (one Redis only). */
  command(args: readonly string[], operation: string): Promise<unknown>;
  /** Whether a dropped connection that served the keys `affects` marks loses a lease on `key`. */
  lostWith(key: string, affects: (key: string) => boolean): boolean;
  /** Whether one script may name all these keys (one Cluster slot; always on one plain Redis). */
  sameSlot(keys: readonly string[]): boolean;
  /** A pushed key's name as the primitives know it (a key-majority replica's key names its name). */
  readonly logical: ((key: string) => string) | undefined;
}

const same = (reply: unknown): unknown => reply;

/** The runner over one driver, with the `durability` WAIT after each acquisition. */
export class SingleRunner implements Runner {
  readonly replicated = false;
  readonly logical = undefined;
  readonly #driver: Driver;
  /** #fail's: a few operations ('acquire', 'release', a primitive's own), each made once. */
  readonly #fails = new Map<string, (error: unknown) => never>();

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  get tracking(): boolean {
    return this.#driver.tracking;
  }

  acquire(op: AcquireOp): Promise<Grant> {
    const epoch = durabilityEpoch(this.#driver, op.key);
    // Without `durability`: the reply read in the driver's one then() (Driver.evalThen).
    if (epoch === undefined)
      return this.#evalThen(op.call, (reply) => op.parse(reply), this.#fail(op.operation));
    return this.#durable(op, epoch);
  }

  async #durable(op: AcquireOp, epoch: number): Promise<Grant> {
    const grant = op.parse(await this.eval(op.call, op.operation));
    if ('fence' in grant) await confirmDurable(this.#driver, op.name, op.key, op.release(), epoch);
    return grant;
  }

  async extend(ops: readonly ExtendOp[]): Promise<(boolean | Error)[]> {
    if (ops.length === 0) return [];
    return toOutcomes(await this.#driver.evalMany(ops.map((op) => op.call)), 'extend');
  }

  async release(calls: readonly ScriptCall[]): Promise<(boolean | Error)[]> {
    if (calls.length === 1) {
      // One release, the common case: a plain call, not a one-item pipeline.
      const reply = await this.#driver.eval(calls[0]!).catch((error: unknown) => error);
      return toOutcomes([reply], 'release');
    }
    return toOutcomes(await this.#driver.evalMany(calls), 'release');
  }

  lostWith(key: string, affects: (key: string) => boolean): boolean {
    return affects(key);
  }

  sameSlot(keys: readonly string[]): boolean {
    return this.#driver.sameSlot?.(keys) ?? true;
  }

  eval(call: ScriptCall, operation: string): Promise<unknown>;
  eval<T>(call: ScriptCall, operation: string, read: (reply: unknown) => T): Promise<T>;
  eval(call: ScriptCall, operation: string, read: (reply: unknown) => unknown = same): Promise<unknown> {
    return this.#evalThen(call, read, this.#fail(operation));
  }

  /** What a call of `operation` fails with: made once per operation, not per call. */
  #fail(operation: string): (error: unknown) => never {
    let fail = this.#fails.get(operation);
    if (fail === undefined) {
      fail = (error: unknown): never => {
        throw toLeaseholdError(error, operation);
      };
      this.#fails.set(operation, fail);
    }
    return fail;
  }

  /** driver.eval(call).then(read, fail), in one promise where the driver can (Driver.evalThen). */
  #evalThen<T>(call: ScriptCall, read: (reply: unknown) => T, fail: (error: unknown) => never): Promise<T> {
    const driver = this.#driver;
    return driver.evalThen === undefined
      ? driver.eval(call).then(read, fail)
      : driver.evalThen(call, read, fail);
  }

  command(args: readonly string[], operation: string): Promise<unknown> {
    return this.#driver.command(args).catch((error: unknown) => {
      throw toLeaseholdError(error, operation);
    });
  }
}

/** The error a replicated runner throws for calls only one Redis can answer. */
export function oneRedisOnly(operation: string): QuorumError {
  return new QuorumError(`${operation}: not available on a quorum of nodes`);
}
