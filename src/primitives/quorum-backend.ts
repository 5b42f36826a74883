import type { Driver, ScriptCall } from '../driver/types.ts';
import { QuorumError, toLeaseholdError } from '../errors.ts';
import { scripts } from '../scripts/index.ts';
import { gather, type NodeResult } from './gather.ts';
import {
  type AcquireReply,
  acquireCall,
  type ExtendItem,
  forceCall,
  type MutexBackend,
  type MutexKeys,
  parseAcquire,
  releaseCall,
} from './mutex-backend.ts';
import { toFence } from './replies.ts';

/**
 * The mutex over N independent masters (Redlock): a lease needs a majority of nodes, every
 * attempt goes to all nodes at once, and the caller moves on as soon as the outcome is decided,
 * so a hung node costs nothing and an impossible majority fails fast. Fencing tokens are the
 * maximum over the majority, written back to every node before the lease is handed out.
 */
export class QuorumBackend implements MutexBackend {
  readonly #drivers: readonly Driver[];
  readonly #majority: number;
  /** Lock keys whose last extension found them on a majority but not on every node. */
  readonly #partial = new Set<string>();

  constructor(drivers: readonly Driver[]) {
    this.#drivers = drivers;
    this.#majority = Math.floor(drivers.length / 2) + 1;
  }

  /** Pushes proven on a majority of nodes: any majority that takes a lock shares one of them. */
  get tracking(): boolean {
    return this.#drivers.filter((driver) => driver.tracking).length >= this.#majority;
  }

  async acquire(keys: MutexKeys, token: string, ttl: number): Promise<AcquireReply> {
    // Past half the TTL a majority would leave too little validity to be worth having.
    const replies = await this.#all(
      (d) => d.eval(acquireCall(keys, token, ttl)).then(parseAcquire),
      ttl / 2,
      (r) => ('fence' in r ? 'yes' : 'no'),
    );
    const fences: bigint[] = [];
    const pttls: number[] = [];
    let errors = 0;
    for (const reply of replies) {
      if (reply?.ok !== true) errors += 1;
      else if ('fence' in reply.value) fences.push(reply.value.fence);
      else pttls.push(reply.value.pttl);
    }
    if (fences.length >= this.#majority) {
      const fence = maxOf(fences);
      if (await this.#confirm(keys, token, fence, ttl)) return { fence };
    }
    await this.#releaseEverywhere(keys.lock, token, replies);
    if (errors > this.#drivers.length - this.#majority) {
      throw new QuorumError(
        `acquire: only ${this.#drivers.length - errors} of ${this.#drivers.length} nodes answered; ` +
          `a majority of ${this.#majority} is needed`,
        { cause: firstError(replies) },
      );
    }
    return { pttl: retryAfter(pttls, this.#drivers.length - this.#majority) };
  }

  async force(keys: MutexKeys, token: string, ttl: number): Promise<bigint> {
    const replies = await this.#all(
      (d) => d.eval(forceCall(keys, token, ttl)).then(toFence),
      ttl / 2,
      () => 'yes',
    );
    const fences = replies.flatMap((r) => (r?.ok === true ? [r.value] : []));
    if (fences.length >= this.#majority) {
      const fence = maxOf(fences);
      if (await this.#confirm(keys, token, fence, ttl)) return fence;
    }
    await this.#releaseEverywhere(keys.lock, token, replies);
    throw new QuorumError(
      `forceAcquire: took ${fences.length} of ${this.#drivers.length} nodes; a majority of ${this.#majority} is needed`,
      { cause: firstError(replies) },
    );
  }

  /** Leases held on a majority but not on every node, as their last extension found them. */
  get partial(): number {
    return this.#partial.size;
  }

  /**
   * Extends on every node. A lease a majority confirms is put back on any node that answers
   * "missing" (it restarted empty), also when that answer comes after the decision, so that
   * restarting the masters one at a time, a TTL apart, never whittles a held lease down below a
   * majority. A key held by another token is left alone. Restores never delay the renewal.
   */
  async extend(items: readonly ExtendItem[]): Promise<(boolean | Error)[]> {
    if (items.length === 0) return [];
    const timeout = Math.min(...items.map((item) => item.ttl)) / 2;
    const calls = items.map(
      (item): ScriptCall => ({
        script: scripts.quorumExtend,
        keys: [item.lock],
        args: [item.token, ms(item.ttl)],
      }),
    );
    const batches = this.#drivers.map((driver) => driver.evalMany(calls));
    const outcomes = await this.#decide(batches, calls.length, timeout, 'extend');
    // Per node and item: does the node hold the lease now (answered 1, or restored)?
    const holding = batches.map((batch, n) =>
      batch.then(
        (replies) =>
          Promise.all(
            items.map((item, i) => {
              if (outcomes[i] !== true || replies[i] === 1) return replies[i] === 1;
              return replies[i] === 0 ? this.#restore(this.#drivers[n]!, item) : false;
            }),
          ),
        () => items.map(() => false),
      ),
    );
    void gather(holding, () => false, timeout).then((perNode) => {
      for (const [i, item] of items.entries()) {
        const everywhere = perNode.every((node) => node?.ok === true && node.value[i] === true);
        if (outcomes[i] === true && !everywhere) this.#partial.add(item.lock);
        else this.#partial.delete(item.lock);
      }
    });
    return outcomes;
  }

  release(items: readonly { lock: string; token: string }[]): Promise<(boolean | Error)[]> {
    for (const item of items) this.#partial.delete(item.lock);
    return this.#perItem(items.map(releaseCall), 5_000, 'release');
  }

  /** Sets the key again on a node where it is missing; true when it holds the token now. */
  async #restore(driver: Driver, item: ExtendItem): Promise<boolean> {
    const call: ScriptCall = {
      script: scripts.quorumRestore,
      keys: [item.lock, item.fence],
      args: [item.token, ms(item.ttl), item.fencingToken.toString()],
    };
    return (await driver.eval(call).catch(() => 0)) === 1;
  }

  /** Raises the fencing counter on every node; true when a majority still holds the lock. */
  async #confirm(keys: MutexKeys, token: string, fence: bigint, ttl: number): Promise<boolean> {
    const call: ScriptCall = {
      script: scripts.fenceRaise,
      keys: [keys.lock, keys.fence],
      args: [token, fence.toString()],
    };
    const replies = await this.#all(
      (d) => d.eval(call),
      ttl / 2,
      (r) => (r === 1 ? 'yes' : 'no'),
    );
    return replies.filter((r) => r?.ok === true && r.value === 1).length >= this.#majority;
  }

  /**
   * Release on every node, also where the acquire is still in flight: each node's connection
   * keeps order, so the release runs after the acquire there. Nodes that already answered are
   * waited for (one round trip), so that a failed attempt has cleaned up when it returns; the
   * others are not, so a hung node cannot hold the caller.
   */
  async #releaseEverywhere(
    lock: string,
    token: string,
    answered: readonly NodeResult<unknown>[],
  ): Promise<void> {
    const releases = this.#drivers.map((driver) => driver.eval(releaseCall({ lock, token })).catch(() => {}));
    await Promise.all(releases.filter((_, i) => answered[i]?.ok === true));
  }

  /** Sends to every node; stops waiting once a majority said yes or can no longer say it. */
  #all<T>(
    send: (driver: Driver) => Promise<T>,
    timeout: number,
    vote: (value: T) => 'yes' | 'no',
  ): Promise<NodeResult<T>[]> {
    const n = this.#drivers.length;
    return gather(
      this.#drivers.map((driver) => send(driver)),
      (results) => {
        const yes = results.filter((r) => r?.ok === true && vote(r.value) === 'yes').length;
        const notYes = results.filter((r) => r !== undefined && !(r.ok && vote(r.value) === 'yes')).length;
        return yes >= this.#majority || notYes > n - this.#majority;
      },
      timeout,
    );
  }

  /** `calls` as one pipelined batch per node, decided per item (see #decide). */
  async #perItem(calls: ScriptCall[], timeout: number, operation: string): Promise<(boolean | Error)[]> {
    const batches = this.#drivers.map((driver) => driver.evalMany(calls));
    return this.#decide(batches, calls.length, timeout, operation);
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
    const n = this.#drivers.length;
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

const ms = (ttl: number) => String(Math.ceil(ttl));

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
