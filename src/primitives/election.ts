import { monotonic } from '../clock.ts';
import { keyFor } from '../context.ts';
import { ConnectionClosedError, RedisUnavailableError, toLeaseholdError, toOutcomes } from '../errors.ts';
import { Lease, type LeaseCore, type LeaseInit } from '../lease.ts';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkKnownKeys,
  checkObject,
  checkSignal,
  fail,
} from '../options.ts';
import { stamp } from '../owner.ts';
import { loadScript } from '../scripts/index.ts';
import type { Attempt } from '../wait-queue.ts';
import type { Keeper } from './keeper.ts';
import { pair, toFence, toNumber } from './replies.ts';

const scripts = {
  campaign: loadScript('election-campaign'),
  extend: loadScript('election-extend'),
  proclaim: loadScript('election-proclaim'),
  resign: loadScript('election-resign'),
  observe: loadScript('election-observe'),
};

/** Entries kept in an election's change log; an observer further behind than this misses some. */
const LOG_LENGTH = '1000';
/** Entries an observer reads per round trip. */
const BATCH = 100;
/** Longest value accepted, in characters. */
const MAX_VALUE = 65_536;

/** The current leader: the value it proclaimed and its term's fencing token. */
export interface Leader {
  value: string;
  fencingToken: bigint;
}

/**
 * One leadership change, as `observe()` yields it. `elected`: a new term began; `proclaimed`: the
 * leader changed its value; `vacant`: the term with this fencing token ended (resigned, expired,
 * or taken away) and nobody leads.
 */
export type LeadershipChange =
  | { type: 'elected' | 'proclaimed'; leader: Leader; fencingToken: bigint }
  | { type: 'vacant'; leader: undefined; fencingToken: bigint };

function checkValue(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_VALUE) {
    fail('value', `a string of at most ${MAX_VALUE} characters`, value);
  }
  return value;
}

const text = (v: unknown): string => (v instanceof Uint8Array ? Buffer.from(v).toString() : String(v));

/**
 * A leader's term: a Lease (signal, fencingToken, extend, release) that can also change the
 * value it proclaims. `resign()` is `release()`.
 */
export class Term extends Lease {
  readonly #core: ElectionCore;

  /** @internal */
  constructor(init: LeaseInit, core: ElectionCore) {
    super(init);
    this.#core = core;
  }

  /** Publishes a new value for this term; observers see it as a `proclaimed` change. */
  async proclaim(value: string): Promise<void> {
    checkValue(value);
    if (this.done) throw this.signal.reason;
    if (!(await this.#core.proclaim(this, value))) {
      this.lose('taken', 'no longer the leader when proclaiming');
      throw this.signal.reason;
    }
  }

  /** Ends the term (observers see `vacant`). Resolves true when this was still the leader. */
  resign(): Promise<boolean> {
    return this.release();
  }
}

/**
 * Redis side of every election of one Leasehold instance: the leader is a hash with a TTL,
 * and every change is appended to a stream, so observers read each change once and in order.
 * @internal
 */
export class ElectionCore implements LeaseCore {
  readonly #keeper: Keeper;

  constructor(keeper: Keeper) {
    this.#keeper = keeper;
  }

  keys(name: string): { leader: string; fence: string; log: string } {
    const { prefix } = this.#keeper.ctx;
    return {
      leader: keyFor(prefix, name, 'election'),
      fence: keyFor(prefix, name, 'election:fence'),
      log: keyFor(prefix, name, 'election:log'),
    };
  }

  async campaign(name: string, value: string, ttl: number, owner?: string): Promise<Attempt<Lease>> {
    const k = this.keys(name);
    const token = stamp(owner ?? this.#keeper.ctx.owner);
    const sentAt = monotonic();
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: scripts.campaign,
        keys: [k.leader, k.fence, k.log],
        args: [token, value, String(Math.ceil(ttl)), LOG_LENGTH],
      }),
      'campaign',
    );
    const [ok, result] = pair(reply, 'election-campaign');
    if (ok !== 1) return { retryIn: this.#keeper.retryIn(toNumber(result), ttl) };
    const lease = this.#keeper.hold(
      { name, stored: token, fencingToken: toFence(result), ttl, sentAt, core: this },
      { key: k.leader, policy: 'verify', wake: [k.leader, k.log] },
      (init) => new Term(init, this),
    );
    this.#keeper.wake(k.log);
    return { acquired: lease };
  }

  extendMany(items: readonly { lease: Lease; ttl: number }[]): Promise<(boolean | Error)[]> {
    const calls = items.map(({ lease, ttl }) => ({
      script: scripts.extend,
      keys: [this.keys(lease.name).leader],
      args: [lease.stored, String(Math.ceil(ttl))],
    }));
    return this.#keeper.ctx.driver.evalMany(calls).then((results) => toOutcomes(results, 'extend'));
  }

  async release(lease: Lease): Promise<boolean> {
    const k = this.keys(lease.name);
    const reply = await this.#keeper.ctx.driver
      .eval({ script: scripts.resign, keys: [k.leader, k.log], args: [lease.stored, LOG_LENGTH] })
      .catch((error: unknown) => {
        throw toLeaseholdError(error, 'resign');
      });
    return reply === 1;
  }

  async proclaim(lease: Lease, value: string): Promise<boolean> {
    const k = this.keys(lease.name);
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: scripts.proclaim,
        keys: [k.leader, k.log],
        args: [lease.stored, value, LOG_LENGTH],
      }),
      'proclaim',
    );
    this.#keeper.wake(k.log);
    return reply === 1;
  }

  async leader(name: string): Promise<Leader | undefined> {
    if (this.#keeper.ctx.closed) throw new ConnectionClosedError();
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.command(['HMGET', this.keys(name).leader, 'value', 'fence']),
      'leader',
    );
    if (!Array.isArray(reply) || reply[1] === null || reply[1] === undefined) return undefined;
    return { value: text(reply[0]), fencingToken: toFence(text(reply[1])) };
  }

  /** Changes after entry `after` ('' for the latest one) and the leader's remaining TTL. */
  async read(name: string, after: string): Promise<{ changes: [string, LeadershipChange][]; pttl: number }> {
    const k = this.keys(name);
    const reply = await this.#keeper.run(
      this.#keeper.ctx.driver.eval({
        script: scripts.observe,
        keys: [k.leader, k.log],
        args: [after, String(BATCH), LOG_LENGTH],
      }),
      'observe',
    );
    const [entries, pttl] = reply as [[unknown, unknown[]][], unknown];
    const changes = entries.map(([id, fields]): [string, LeadershipChange] => {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[text(fields[i])] = text(fields[i + 1]);
      const fencingToken = BigInt(f['fence'] ?? '0');
      const type = f['type'];
      const change: LeadershipChange =
        type === 'elected' || type === 'proclaimed'
          ? { type, leader: { value: f['value'] ?? '', fencingToken }, fencingToken }
          : { type: 'vacant', leader: undefined, fencingToken };
      return [text(id), change];
    });
    return { changes, pttl: toNumber(pttl) };
  }
}

/**
 * Leader election: one leader at a time per name, each term with a larger fencing token.
 *
 * @example
 * const election = lh.election('scheduler');
 * const term = await election.campaign('node-a');   // waits to be elected
 * runScheduler({ signal: term.signal, fence: term.fencingToken });
 * for await (const change of election.observe({ signal })) console.log(change.type, change.leader);
 */
export class Election {
  /** The election's name. */
  readonly name: string;
  readonly #keeper: Keeper;
  readonly #core: ElectionCore;
  readonly #defaults: { ttl: number };

  /** @internal Use `lh.election(name)`. */
  constructor(keeper: Keeper, core: ElectionCore, name: string, defaults: { ttl: number }) {
    this.#keeper = keeper;
    this.#core = core;
    this.name = name;
    this.#defaults = defaults;
  }

  /**
   * Waits to become leader, proclaiming `value`, and returns the term. Rejects with
   * LockTimeoutError after `timeout`, `signal.reason` on abort, ConnectionClosedError on close().
   */
  campaign(value: string, options?: AcquireOptions): Promise<Term> {
    try {
      checkValue(value);
      const valid = checkAcquireOptions(options, this.#defaults);
      const k = this.#core.keys(this.name);
      const queue = { key: k.leader, watch: [k.leader], shared: false };
      return this.#keeper.wait(this.name, queue, valid, () =>
        this.#core.campaign(this.name, value, valid.ttl, valid.owner),
      ) as Promise<Term>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The current leader, or undefined when nobody leads. */
  leader(): Promise<Leader | undefined> {
    return this.#core.leader(this.name);
  }

  /**
   * Yields the latest change at once (if any), then every change as it happens, in order, each
   * once. Driven by notifications; while a leader is in office it also looks again when the
   * leader's TTL would run out, since Redis does not announce expiry in time. Ends with
   * `signal.reason` when `signal` aborts and with ConnectionClosedError on close().
   */
  observe(options?: { signal?: AbortSignal }): AsyncGenerator<LeadershipChange, void, undefined> {
    const o = checkObject(options, 'options');
    checkKnownKeys(o, ['signal'], 'observe options');
    return this.#observe(checkSignal(o['signal']));
  }

  async *#observe(signal: AbortSignal | undefined): AsyncGenerator<LeadershipChange, void, undefined> {
    const keeper = this.#keeper;
    if (keeper.ctx.closed) throw new ConnectionClosedError();
    signal?.throwIfAborted();
    const { log } = this.#core.keys(this.name);
    let pending = true;
    let closed = false;
    let resume: (() => void) | undefined;
    const wake = () => {
      pending = true;
      resume?.();
    };
    const unwatch = keeper.ctx.dispatcher.watch(log, { onChange: wake });
    const unwake = keeper.onWake(log, wake);
    const unclose = keeper.onClose(() => {
      closed = true;
      wake();
    });
    signal?.addEventListener('abort', wake);
    let timer: NodeJS.Timeout | undefined;
    try {
      let after = '';
      let sleep = Number.POSITIVE_INFINITY;
      for (;;) {
        signal?.throwIfAborted();
        if (closed) throw new ConnectionClosedError();
        if (!pending) {
          await new Promise<void>((resolve) => {
            resume = resolve;
            if (sleep !== Number.POSITIVE_INFINITY) {
              timer = setTimeout(wake, sleep);
              timer.unref();
            }
          });
          resume = undefined;
          clearTimeout(timer);
          continue;
        }
        pending = false;
        let batch: Awaited<ReturnType<ElectionCore['read']>>;
        try {
          batch = await this.#core.read(this.name, after);
        } catch (error) {
          if (!(error instanceof RedisUnavailableError)) throw error;
          sleep = keeper.ctx.retryDelay;
          continue;
        }
        // An empty log at the start: from now on read every entry from its beginning.
        if (after === '' && batch.changes.length === 0) after = '0-0';
        for (const [id, change] of batch.changes) {
          after = id;
          yield change;
        }
        if (batch.changes.length >= BATCH) pending = true;
        const untilExpiry = batch.pttl >= 0 ? batch.pttl + 1 : Number.POSITIVE_INFINITY;
        sleep = keeper.ctx.driver.tracking ? untilExpiry : Math.min(untilExpiry, keeper.ctx.retryDelay);
      }
    } finally {
      clearTimeout(timer);
      unwatch();
      unwake();
      unclose();
      signal?.removeEventListener('abort', wake);
    }
  }
}
