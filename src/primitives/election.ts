import { optionalText, toFence, toNumber, toText } from '../base/replies.ts';
import type { ScriptCall } from '../driver/types.ts';
import type { Engine } from '../engine/engine.ts';
import type { Holding } from '../engine/held.ts';
import type { WaitSpec } from '../engine/spec.ts';
import { ms, type Spec } from '../engine/spec.ts';
import { ConnectionClosedError } from '../errors.ts';
import { Lease, type LeaseInit } from '../lease.ts';
import {
  type AcquireOptions,
  checkElectionValue,
  checkKnownKeys,
  checkObject,
  checkSignal,
} from '../options/index.ts';
import { loadScript } from '../scripts/index.ts';
import { Handle } from './handle.ts';
import { fence, type Holder, holder, type InspectionSpec, num, pairs, waiter } from './inspection.ts';
import { layout } from './layout.ts';

const scripts = {
  campaign: loadScript('election-campaign'),
  extend: loadScript('election-extend'),
  proclaim: loadScript('election-proclaim'),
  resign: loadScript('election-resign'),
  observe: loadScript('election-observe'),
  withdraw: loadScript('forget-waiter'),
};

/** Entries kept in an election's change log; an observer further behind than this misses some. */
const LOG_LENGTH = '1000';
/** Entries an observer reads per round trip. */
const BATCH = 100;

/** The current leader: the value it proclaimed and its term's fencing token. */
/** Options of `election.lead()`: it campaigns until elected, so there is no timeout. */
export interface LeadOptions {
  /** Aborting it ends the campaign or the term (the term's signal aborts, fn is told), and lead() resolves. */
  signal?: AbortSignal;
  /** Each term's TTL: how long the others wait after this process crashed. @default the instance's `ttl` */
  ttl?: number;
  /** Who leads, as inspection shows it. @default the instance's `owner` */
  owner?: string;
}

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

/**
 * A leader's term: a Lease (signal, fencingToken, extend, release) that can also change the
 * value it proclaims. `resign()` is `release()`.
 */
export class Term extends Lease {
  readonly #spec: ElectionSpec;

  /** @internal */
  constructor(init: LeaseInit, spec: ElectionSpec) {
    super(init);
    this.#spec = spec;
  }

  /** Publishes a new value for this term; observers see it as a `proclaimed` change. */
  async proclaim(value: string): Promise<void> {
    checkElectionValue(value);
    if (this.done) throw this.signal.reason;
    if (!(await this.#spec.proclaim(this, value))) {
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
 * The election's keys: the leader hash (token, value, term fence), its fencing counter, the change
 * log, and the candidates waiting (for inspection: election-campaign.lua records them).
 */
export const electionLayout = layout({
  leader: 'election',
  fence: 'election:fence',
  log: 'election:log',
  candidates: 'election:candidates',
});

type ElectionKeys = ReturnType<typeof electionLayout.keys>;

/** Ends the term of the candidate with `stored` if it still leads, and logs the vacancy. */
export const resignCall = (k: ElectionKeys, stored: string): ScriptCall => ({
  script: scripts.resign,
  keys: [k.leader, k.log],
  args: [stored, LOG_LENGTH],
});

/**
 * An election as inspection reads it: `{now, fence, token, value, term fence, pttl, candidates,
 * {candidate, lapse, ...}}`.
 */
export const electionInspection: InspectionSpec<keyof ElectionKeys> = {
  script: loadScript('inspect-election'),
  keys: ['leader', 'fence', 'candidates'],
  state: ['leader', 'fence', 'candidates'],
  held: ['leader'],
  parse(name, r) {
    const token = optionalText(r[2]);
    if (optionalText(r[1]) === undefined && token === undefined) return undefined;
    const holders: Holder[] = [];
    if (token !== undefined) {
      holders.push({ ...holder(token, num(r[5]), fence(r[4])), value: optionalText(r[3]) ?? '' });
    }
    const now = num(r[0]);
    // Candidates have no line: listed in the order they began to wait.
    const waiters = pairs(r[7])
      .map(([value, lapse]) => waiter(value, lapse, now))
      .sort((a, b) => (a.since ?? 0) - (b.since ?? 0));
    const queued = num(r[6]) || 0;
    return { name, primitive: 'election', holders, waiters, lastFencingToken: fence(r[1]), queued };
  },
};

/**
 * The election as a spec: the leader is a hash with a TTL, and every change is appended to a
 * stream, so observers read each change once and in order. The request is the value to proclaim.
 * One per Leasehold instance (its Terms proclaim through it).
 */
export class ElectionSpec implements Spec<ElectionKeys, string> {
  readonly operation = 'campaign';
  readonly primitive = 'election';
  readonly #engine: Engine;
  /** This instance's terms by name, for Election.isLeader (ended ones are dropped when read). */
  readonly #terms = new Map<string, Set<Term>>();

  constructor(engine: Engine) {
    this.#engine = engine;
  }

  keys(prefix: string, name: string): ElectionKeys {
    return electionLayout.keys(prefix, name);
  }

  acquire(k: ElectionKeys, stored: string, ttl: number, value: string, join: boolean): ScriptCall {
    return {
      script: scripts.campaign,
      keys: [k.leader, k.fence, k.log, k.mark, k.candidates],
      args: [stored, value, ms(ttl), LOG_LENGTH, join ? '1' : '0'],
    };
  }

  /**
   * A waiting candidate is recorded among the candidates (for inspection only, Spec.records)
   * under one stored value for its whole wait, and forgotten when it gives up.
   */
  readonly records = {
    withdraw: (k: ElectionKeys, stored: string): ScriptCall => ({
      script: scripts.withdraw,
      keys: [k.candidates],
      args: [stored],
    }),
  };

  extend(k: ElectionKeys, stored: string, ttl: number): ScriptCall {
    return { script: scripts.extend, keys: [k.leader, k.log], args: [stored, ms(ttl)] };
  }

  release(k: ElectionKeys, stored: string): ScriptCall {
    return resignCall(k, stored);
  }

  holding(k: ElectionKeys): Holding {
    return { key: k.leader, policy: 'verify', wake: [k.leader, k.log] };
  }

  waiting(k: ElectionKeys): WaitSpec {
    return { key: k.leader, watch: [k.leader], shared: false };
  }

  /** Observers in this process hear of the new term at once (no push for our own writes). */
  granted(_lease: Lease, k: ElectionKeys): readonly string[] {
    return [k.log];
  }

  make(init: LeaseInit): Lease {
    const term = new Term(init, this);
    let terms = this.#terms.get(init.name);
    if (terms === undefined) {
      terms = new Set();
      this.#terms.set(init.name, terms);
    }
    terms.add(term);
    return term;
  }

  /**
   * Whether this instance holds a term of `name` now (not ended, within its validity, not being
   * resigned: the resignation may hand the name to another instance before its reply is back).
   */
  leading(name: string): boolean {
    const terms = this.#terms.get(name);
    if (terms === undefined) return false;
    let leading = false;
    for (const term of terms) {
      if (term.lost || term.releasing || term.signal.aborted) terms.delete(term);
      else leading = true;
    }
    if (terms.size === 0) this.#terms.delete(name);
    return leading;
  }

  async proclaim(lease: Lease, value: string): Promise<boolean> {
    const k = this.keys(this.#engine.prefix, lease.name);
    const call = {
      script: scripts.proclaim,
      keys: [k.leader, k.log],
      args: [lease.stored, value, LOG_LENGTH],
    };
    // Observers in this process hear no push for our own write: the engine wakes them.
    const reply = await this.#engine.eval(this, call, 'proclaim', [k.log]);
    return reply === 1;
  }

  async leader(name: string): Promise<Leader | undefined> {
    const args = ['HMGET', this.keys(this.#engine.prefix, name).leader, 'value', 'fence'];
    const reply = await this.#engine.command(this, args, 'leader');
    if (!Array.isArray(reply) || reply[1] === null || reply[1] === undefined) return undefined;
    return { value: toText(reply[0]), fencingToken: toFence(toText(reply[1])) };
  }

  /** Changes after entry `after` ('' for the latest one) and the leader's remaining TTL. */
  async read(name: string, after: string): Promise<{ changes: [string, LeadershipChange][]; pttl: number }> {
    const k = this.keys(this.#engine.prefix, name);
    const call = {
      script: scripts.observe,
      keys: [k.leader, k.log],
      args: [after, String(BATCH), LOG_LENGTH],
    };
    const reply = await this.#engine.eval(this, call, 'observe');
    const [entries, pttl] = reply as [[unknown, unknown[]][], unknown];
    const changes = entries.map(([id, fields]): [string, LeadershipChange] => {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[toText(fields[i])] = toText(fields[i + 1]);
      const fencingToken = BigInt(f['fence'] ?? '0');
      const type = f['type'];
      const change: LeadershipChange =
        type === 'elected' || type === 'proclaimed'
          ? { type, leader: { value: f['value'] ?? '', fencingToken }, fencingToken }
          : { type: 'vacant', leader: undefined, fencingToken };
      return [toText(id), change];
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
export class Election extends Handle {
  readonly #spec: ElectionSpec;

  /** @internal Use `lh.election(name)`. */
  constructor(engine: Engine, spec: ElectionSpec, name: string, defaults: { ttl: number }) {
    super(engine, name, defaults);
    this.#spec = spec;
  }

  /**
   * Waits to become leader, proclaiming `value`, and returns the term. Rejects with
   * LockTimeoutError after `timeout`, `signal.reason` on abort, ConnectionClosedError on close().
   */
  campaign(value: string, options?: AcquireOptions): Promise<Term> {
    try {
      checkElectionValue(value);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.wait(this.#spec, value, options) as Promise<Term>;
  }

  /** Whether this Leasehold instance holds a term of this election now. */
  get isLeader(): boolean {
    return this.#spec.leading(this.name);
  }

  /**
   * Leads for as long as `options.signal` lets it: campaigns (waiting to be elected), runs
   * `fn(term)` while leader (`term.signal` aborts the moment leadership is lost), resigns when `fn`
   * returns, and campaigns again, after a loss too, until `signal` aborts or the instance closes;
   * then it resolves. When `fn` throws while still leader, it resigns and rejects with that error.
   * How soon another instance leads after this one crashed is `ttl` (docs/election.md).
   * @example
   * await lh.election('scheduler').lead('node-a', async (term) => {
   *   await runScheduler({ signal: term.signal, fence: term.fencingToken });
   * }, { signal: shutdown.signal });
   */
  async lead(
    value: string,
    fn: (term: Term) => Promise<unknown> | unknown,
    options?: LeadOptions,
  ): Promise<void> {
    checkElectionValue(value);
    if (typeof fn !== 'function') throw new TypeError('leasehold: lead needs a function to run while leader');
    const o = checkObject(options, 'options');
    checkKnownKeys(o, ['signal', 'ttl', 'owner'], 'lead options');
    const signal = checkSignal(o['signal']);
    const stopped = (): boolean => signal?.aborted === true;
    while (!stopped()) {
      let term: Term;
      try {
        term = await this.campaign(value, o as AcquireOptions);
      } catch (error) {
        if (stopped() || error instanceof ConnectionClosedError) return;
        throw error;
      }
      // Stopping ends the term: its signal aborts (LockReleasedError), which is how fn is told.
      const resign = () => void term.resign().catch(() => {});
      signal?.addEventListener('abort', resign, { once: true });
      try {
        await fn(term);
      } catch (error) {
        // Thrown because leadership was lost, or the caller stopped: campaign again, or stop.
        if (!term.lost && !stopped()) {
          await term.resign().catch(() => {});
          throw error;
        }
      } finally {
        signal?.removeEventListener('abort', resign);
      }
      await term.resign().catch(() => {});
    }
  }

  /** The current leader, or undefined when nobody leads. */
  leader(): Promise<Leader | undefined> {
    return this.#spec.leader(this.name);
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

  /** The change log, read from the latest entry on, for the engine's follow loop. */
  #observe(signal: AbortSignal | undefined): AsyncGenerator<LeadershipChange, void, undefined> {
    const spec = this.#spec;
    const name = this.name;
    let after = '';
    const source = {
      key: spec.keys(this.engine.prefix, name).log,
      read: async () => {
        const batch = await spec.read(name, after);
        // An empty log at the start: from now on read every entry from its beginning.
        if (after === '' && batch.changes.length === 0) after = '0-0';
        const last = batch.changes.at(-1);
        if (last !== undefined) after = last[0];
        return {
          items: batch.changes.map(([, change]) => change),
          more: batch.changes.length >= BATCH,
          // A leader's expiry is not pushed in time: look again when its TTL would run out.
          retryIn: batch.pttl >= 0 ? batch.pttl + 1 : Number.POSITIVE_INFINITY,
        };
      },
    };
    return this.engine.follow(spec, source, signal) as AsyncGenerator<LeadershipChange, void, undefined>;
  }
}
