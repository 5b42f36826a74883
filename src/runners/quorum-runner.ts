import { fenceMarkLike, isFenceMark } from '../base/fence-mark.ts';
import type { Driver, ScriptCall } from '../driver/types.ts';
import { QuorumError } from '../errors.ts';
import { toLeaseholdError } from './failures.ts';
import { gather, type NodeResult } from './gather.ts';
import { type AcquireOp, type ExtendOp, type Grant, oneRedisOnly, type Runner } from './runner.ts';

/**
 * One voter of a quorum: a driver, and how a key is named there. Independent masters keep every
 * key as it is; a key majority on one Cluster gives each replica its own hash tag (key-majority.ts).
 */
export interface Replica {
  driver: Driver;
  key?: (key: string) => string;
}

/**
 * Leases over N replicas (Redlock): a lease needs a majority, every attempt goes to all replicas
 * at once, and the caller moves on as soon as the outcome is decided, so a hung node costs
 * nothing and an impossible majority fails fast. Fencing tokens are the maximum over the
 * majority, written back to every replica before the lease is handed out.
 */
export class QuorumRunner implements Runner {
  readonly replicated = true;
  readonly #replicas: readonly Replica[];
  readonly #majority: number;
  /** Keys whose last extension found them on a majority but not on every replica. */
  readonly #partial = new Set<string>();
  readonly logical: ((key: string) => string) | undefined;

  constructor(replicas: readonly Replica[], logical?: (key: string) => string) {
    this.#replicas = replicas;
    this.#majority = Math.floor(replicas.length / 2) + 1;
    this.logical = logical;
  }

  /** Pushes proven on a majority of replicas: any majority that takes a lock shares one of them. */
  get tracking(): boolean {
    // A key majority's replicas share one driver: proven there, proven for all.
    return this.#replicas.filter((r) => r.driver.tracking).length >= this.#majority;
  }

  async acquire(op: AcquireOp): Promise<Grant> {
    // Past half the TTL a majority would leave too little validity to be worth having.
    const timeout = op.ttl / 2;
    const replies = await this.#all(
      (r) => r.driver.eval(this.#on(r, op.call)).then((reply) => op.parse(reply)),
      timeout,
      (g) => ('fence' in g ? 'yes' : 'no'),
    );
    const fences: bigint[] = [];
    const pttls: number[] = [];
    let errors = 0;
    for (const reply of replies) {
      if (reply?.ok !== true) errors += 1;
      else if ('fence' in reply.value) fences.push(reply.value.fence);
      else pttls.push(reply.value.hint);
    }
    if (fences.length >= this.#majority) {
      const fence = maxOf(fences);
      const confirm = op.confirm(fence);
      if (confirm === undefined || (await this.#confirm(confirm, timeout))) return { fence };
    }
    await this.#releaseEverywhere(op.release(), replies);
    if (errors > this.#replicas.length - this.#majority) {
      throw new QuorumError(
        `${op.operation}: only ${this.#replicas.length - errors} of ${this.#replicas.length} nodes answered; ` +
          `a majority of ${this.#majority} is needed`,
        { cause: firstError(replies) },
      );
    }
    return { hint: retryAfter(pttls, this.#replicas.length - this.#majority) };
  }

  /**
   * Whether losing the replicas whose key `affects` marks leaves too few for a majority. Only a
   * key majority asks with a real `affects`: independent masters are counted by connection, and
   * the instance asks only once fewer than a majority of them are connected.
   */
  lostWith(key: string, affects: (key: string) => boolean): boolean {
    const lost = this.#replicas.filter((r) => affects(r.key === undefined ? key : r.key(key))).length;
    return lost > this.#replicas.length - this.#majority;
  }

  /** One script runs on one replica: a quorum never takes several keys in one. */
  sameSlot(): boolean {
    return false;
  }

  /** Leases held on a majority but not on every replica, as their last extension found them. */
  get partial(): number {
    return this.#partial.size;
  }

  /**
   * Extends on every replica. A lease a majority confirms is put back on any replica that
   * answers "missing" (it restarted empty, or its shard failed over without the key), also when
   * that answer comes after the decision, so that restarting the masters one at a time, a TTL
   * apart, never whittles a held lease down below a majority. A key held by another token is
   * left alone. Restores never delay the renewal.
   */
  async extend(ops: readonly ExtendOp[]): Promise<(boolean | Error)[]> {
    if (ops.length === 0) return [];
    const timeout = Math.min(...ops.map((op) => op.ttl)) / 2;
    const batches = this.#replicas.map((r) => r.driver.evalMany(ops.map((op) => this.#on(r, op.call))));
    const outcomes = await this.#decide(batches, ops.length, timeout, 'extend');
    // Per replica and op: does the replica hold the lease now (answered 1, or restored)?
    const holding = batches.map((batch, n) =>
      batch.then(
        (replies) =>
          Promise.all(
            ops.map((op, i) => {
              if (outcomes[i] !== true || replies[i] === 1) return replies[i] === 1;
              return replies[i] === 0 ? this.#restore(this.#replicas[n]!, op) : false;
            }),
          ),
        () => ops.map(() => false),
      ),
    );
    void gather(holding, () => false, timeout).then((perReplica) => {
      for (const [i, op] of ops.entries()) {
        const key = op.call.keys[0] ?? '';
        const everywhere = perReplica.every((r) => r?.ok === true && r.value[i] === true);
        if (outcomes[i] === true && !everywhere) this.#partial.add(key);
        else this.#partial.delete(key);
      }
    });
    return outcomes;
  }

  release(calls: readonly ScriptCall[]): Promise<(boolean | Error)[]> {
    for (const call of calls) this.#partial.delete(call.keys[0] ?? '');
    const batches = this.#replicas.map((r) => r.driver.evalMany(calls.map((call) => this.#on(r, call))));
    return this.#decide(batches, calls.length, 5_000, 'release');
  }

  eval(_call: ScriptCall, operation: string): Promise<never> {
    return Promise.reject(oneRedisOnly(operation));
  }

  command(_args: readonly string[], operation: string): Promise<unknown> {
    return Promise.reject(oneRedisOnly(operation));
  }

  /**
   * `call` with its keys as `replica` names them. A fence mark is the one of the slot the
   * replica's keys live in (a key majority gives each replica a hash tag, so a slot, of its own).
   */
  #on(replica: Replica, call: ScriptCall): ScriptCall {
    const key = replica.key;
    if (key === undefined) return call;
    const first = key(call.keys[0] ?? '');
    const keys = call.keys.map((k, i) =>
      i === 0 ? first : isFenceMark(k) ? fenceMarkLike(k, first) : key(k),
    );
    return { script: call.script, keys, args: call.args };
  }

  /** Sets the key again on a replica where it is missing; true when it holds the token now. */
  async #restore(replica: Replica, op: ExtendOp): Promise<boolean> {
    if (op.restore === undefined) return false;
    return (await replica.driver.eval(this.#on(replica, op.restore)).catch(() => 0)) === 1;
  }

  /** Raises the fencing counter on every replica; true when a majority still holds the lock. */
  async #confirm(call: ScriptCall, timeout: number): Promise<boolean> {
    const replies = await this.#all(
      (r) => r.driver.eval(this.#on(r, call)),
      timeout,
      (reply) => (reply === 1 ? 'yes' : 'no'),
    );
    return replies.filter((r) => r?.ok === true && r.value === 1).length >= this.#majority;
  }

  /**
   * Release on every replica, also where the acquire is still in flight: each connection keeps
   * order, so the release runs after the acquire there. Replicas that already answered are
   * waited for (one round trip), so that a failed attempt has cleaned up when it returns; the
   * others are not, so a hung node cannot hold the caller.
   */
  async #releaseEverywhere(
    release: ScriptCall | readonly ScriptCall[],
    answered: readonly NodeResult<unknown>[],
  ): Promise<void> {
    const back = 'script' in release ? [release] : release;
    const releases = this.#replicas.map((r) =>
      Promise.all(back.map((call) => r.driver.eval(this.#on(r, call)).catch(() => {}))),
    );
    await Promise.all(releases.filter((_, i) => answered[i]?.ok === true));
  }

  /** Sends to every replica; stops waiting once a majority said yes or can no longer say it. */
  #all<T>(
    send: (replica: Replica) => Promise<T>,
    timeout: number,
    vote: (value: T) => 'yes' | 'no',
  ): Promise<NodeResult<T>[]> {
    const n = this.#replicas.length;
    return gather(
      this.#replicas.map((replica) => send(replica)),
      (results) => {
        const yes = results.filter((r) => r?.ok === true && vote(r.value) === 'yes').length;
        const notYes = results.filter((r) => r !== undefined && !(r.ok && vote(r.value) === 'yes')).length;
        return yes >= this.#majority || notYes > n - this.#majority;
      },
      timeout,
    );
  }

  /**
   * Per item of the nodes' batches: held by a majority (a node answered 1), lost by a majority
   * (0 or -1), or unknown. Stops waiting as soon as every item is decided, so a hung node
   * delays nobody.
   */
  async #decide(
    batches: Promise<unknown[]>[],
    count: number,
    timeout: number,
    operation: string,
  ): Promise<(boolean | Error)[]> {
    const calls = Array.from({ length: count });
    const n = this.#replicas.length;
    const tally = (perNode: readonly NodeResult<unknown[]>[], i: number) => {
      let held = 0;
      let gone = 0;
      for (const node of perNode) {
        const value = node?.ok === true ? node.value[i] : undefined;
        if (value === 1) held += 1;
        else if (value === 0 || value === -1) gone += 1;
      }
      return { held, gone, decided: held >= this.#majority || gone > n - this.#majority };
    };
    const perNode = await gather(
      batches,
      (results) => calls.every((_, i) => tally(results, i).decided),
      timeout,
    );
    return calls.map((_, i) => {
      const { held, gone } = tally(perNode, i);
      if (held >= this.#majority) return true;
      if (gone > n - this.#majority) return false;
      return new QuorumError(
        `${operation}: ${held} of ${n} nodes confirmed, ${gone} refused, the rest did not answer; ` +
          `a majority of ${this.#majority} is needed`,
        { cause: toLeaseholdError(firstError(perNode) ?? new Error('no answer'), operation) },
      );
    });
  }
}

/** How long until enough busy nodes free up for a majority: the k-th smallest remaining TTL. */
function retryAfter(pttls: number[], tolerated: number): number {
  const sorted = [...pttls].sort((a, b) => a - b);
  const mustFree = Math.max(1, sorted.length - tolerated);
  return sorted[Math.min(mustFree, sorted.length) - 1] ?? -1;
}

function firstError(results: readonly NodeResult<unknown>[]): unknown {
  for (const r of results) if (r !== undefined && !r.ok) return r.error;
  return undefined;
}

/** Math.max for bigints (Math.max would turn them into imprecise numbers). */
function maxOf(values: readonly bigint[]): bigint {
  let max = values[0] ?? 0n;
  for (const value of values) if (value > max) max = value;
  return max;
}
