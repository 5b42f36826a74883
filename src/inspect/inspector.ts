import type { Driver } from '../driver/types.ts';
import {
  checkInspectOptions,
  checkListOptions,
  type InspectOptions,
  type ListOptions,
} from '../options/inspect.ts';
import type { Holder, Inspection, NodeInspection, Waiter } from '../primitives/inspection.ts';
import { toLeaseholdError } from '../runners/failures.ts';
import { matchPattern, type Primitive, parseKey } from './key-names.ts';
import { readOne } from './read.ts';

/** Keys asked for per SCAN call. */
const SCAN_COUNT = '1000';
/** Holders and waiters listed per sorted set by list() (inspect() takes its own limit). */
const LIST_MAX = 100;
/**
 * Names list() and the live views read at once: one read after the other cost a round trip (two
 * for a name with holders) per name, which a network's latency multiplies; reads sent together
 * are pipelined.
 */
const READS_AT_ONCE = 64;

/**
 * Whether someone holds or waits: a holder (on a majority or on any node of a quorum), a waiter
 * or a queued place. A name whose only keys left are idle bookkeeping (a free lock's fencing
 * counter, until it expires) is not live: list(), `leasehold top` and the dashboard leave it out.
 */
export function isLive(inspection: Inspection): boolean {
  return (
    inspection.holders.length > 0 ||
    (inspection.waiters?.length ?? 0) > 0 ||
    (inspection.queued ?? 0) > 0 ||
    (inspection.permitsInUse ?? 0) > 0 ||
    (inspection.nodes?.some((node) => node.holders.length > 0) ?? false)
  );
}

/** One place inspections read from: one Redis, or a node of a quorum (with its label). */
export interface InspectTarget {
  label: string;
  driver: Driver;
}

/**
 * Where no waiter registers for a direct grant (a connection without a grant subscription: the
 * memory backend, a user's GLIDE client), an empty semaphore queue says nothing about who waits:
 * not recorded. A mutex's waiters are recorded there instead (acquire-recorded.lua), and a
 * read-write lock keeps its waiting writers (recorded either way).
 */
function unregistered(inspection: Inspection | undefined): Inspection | undefined {
  if (inspection === undefined || inspection.primitive !== 'semaphore') return inspection;
  const { queued: _queued, ...rest } = inspection;
  return { ...rest, waiters: undefined };
}

/**
 * Reads holders and waiters from Redis: a read-only script per name and primitive, SCAN (never
 * KEYS) to find names, on every master of a Cluster and on every node of a quorum.
 */
export class Inspector {
  readonly #targets: readonly InspectTarget[];
  readonly #prefix: string;

  constructor(targets: readonly InspectTarget[], prefix: string) {
    this.#targets = targets;
    this.#prefix = prefix;
  }

  async inspect(name: string, options: InspectOptions = {}): Promise<Inspection | undefined> {
    const { order, limit } = checkInspectOptions(options);
    // Read at once (one round trip, not one per primitive); the first found in order answers, and
    // a read that failed throws only when those before it found nothing, as one by one did.
    const read = await Promise.allSettled(order.map((primitive) => this.#read(name, primitive, limit)));
    for (const result of read) {
      if (result.status === 'rejected') throw result.reason;
      if (result.value !== undefined) return result.value;
    }
    return undefined;
  }

  async list(options: ListOptions = {}): Promise<Inspection[]> {
    const { prefix, primitive: only, limit } = checkListOptions(options);
    return this.live(prefix, only, limit);
  }

  /**
   * The live names and primitives under `namePrefix` (someone holds or waits: isLive), at most
   * `limit`, in name order. SCAN finds every key of a name, idle bookkeeping included (a free
   * lock's fencing counter lives on until it expires): each name found is read, and only live
   * ones count towards `limit`, so that idle names never crowd live ones out.
   */
  async live(namePrefix: string, only: Primitive | undefined, limit: number): Promise<Inspection[]> {
    const seen = new Set<string>();
    const found: Inspection[] = [];
    const match = matchPattern(this.#prefix, namePrefix);
    const nodes = this.#targets.flatMap(({ driver }) => driver.scanNodes?.() ?? [driver]);
    scan: for (const node of nodes) {
      let cursor = '0';
      do {
        const reply = (await node
          .command(['SCAN', cursor, 'MATCH', match, 'COUNT', SCAN_COUNT])
          .catch((error: unknown) => {
            throw toLeaseholdError(error, 'SCAN');
          })) as [unknown, unknown[]];
        cursor = String(reply[0]);
        const names: { name: string; primitive: Primitive }[] = [];
        for (const raw of reply[1]) {
          const key = raw instanceof Uint8Array ? Buffer.from(raw).toString() : String(raw);
          const at = parseKey(this.#prefix, key);
          if (at === undefined || (only !== undefined && at.primitive !== only)) continue;
          const id = `${at.primitive}\u0000${at.name}`;
          if (seen.has(id)) continue;
          seen.add(id);
          names.push(at);
        }
        // Counted in SCAN's order: the same names as read one by one, a few more read.
        for await (const one of this.readEach(names)) {
          if (one !== undefined && isLive(one)) found.push(one);
          if (found.length >= limit) break scan;
        }
      } while (cursor !== '0');
    }
    return found.sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : a.primitive < b.primitive ? -1 : 1,
    );
  }

  /**
   * Each name's primitive as inspect() reads it (at most LIST_MAX holders and waiters per set), in
   * the order given, READS_AT_ONCE at a time: their scripts go out together.
   */
  async *readEach(
    names: readonly { name: string; primitive: Primitive }[],
  ): AsyncGenerator<Inspection | undefined> {
    for (let i = 0; i < names.length; i += READS_AT_ONCE) {
      const chunk = names.slice(i, i + READS_AT_ONCE);
      yield* await Promise.all(chunk.map(({ name, primitive }) => this.#read(name, primitive, LIST_MAX)));
    }
  }

  /** One name and primitive: from the one Redis, or merged from every node of a quorum. */
  async #read(name: string, primitive: Primitive, max: number): Promise<Inspection | undefined> {
    const [only] = this.#targets;
    if (this.#targets.length === 1 && only !== undefined) {
      const one = await readOne(only.driver, this.#prefix, name, primitive, max).catch((error: unknown) => {
        throw toLeaseholdError(error, 'inspect');
      });
      return only.driver.subscribe === undefined ? unregistered(one) : one;
    }
    const views = await Promise.all(
      this.#targets.map(({ label, driver }) =>
        readOne(driver, this.#prefix, name, primitive, max).then(
          (view) => ({ label, view, error: undefined }),
          (error: unknown) => ({ label, view: undefined, error: (error as Error).message }),
        ),
      ),
    );
    if (views.every(({ view }) => view === undefined)) {
      const failed = views.find(({ error }) => error !== undefined);
      if (failed !== undefined && views.every(({ error }) => error !== undefined)) {
        throw toLeaseholdError(new Error(failed.error), 'inspect');
      }
      return undefined;
    }
    return mergeQuorum(name, primitive, views);
  }
}

/**
 * Quorum mode: a holder counts when a majority of nodes store its value. Its TTL is the least a
 * majority guarantees. Its fencing token is the counter value a majority of nodes agree on: the
 * lease's token is the max over the majority that granted it, written back to each of them
 * (fence-raise.lua), while a node outside that majority may count higher (undefined if no
 * majority agrees, e.g. while a node restarted empty).
 */
function mergeQuorum(
  name: string,
  primitive: Primitive,
  views: { label: string; view: Inspection | undefined; error: string | undefined }[],
): Inspection {
  const majority = Math.floor(views.length / 2) + 1;
  const nodes: NodeInspection[] = views.map(({ label, view, error }) => ({
    node: label,
    holders: view?.holders ?? [],
    lastFencingToken: view?.lastFencingToken ?? 0n,
    ...(error === undefined ? {} : { error }),
  }));
  const byToken = new Map<string, Holder[]>();
  for (const node of nodes) {
    for (const holder of node.holders)
      byToken.set(holder.token, [...(byToken.get(holder.token) ?? []), holder]);
  }
  const holders: Holder[] = [];
  for (const copies of byToken.values()) {
    if (copies.length < majority) continue;
    const ttls = copies.map((h) => h.ttlLeft).sort((a, b) => b - a);
    const votes = new Map<bigint, number>();
    for (const { fencingToken } of copies) {
      if (fencingToken !== undefined) votes.set(fencingToken, (votes.get(fencingToken) ?? 0) + 1);
    }
    const agreed = [...votes].find(([, count]) => count >= majority)?.[0];
    const first = copies[0] as Holder;
    // A node the grant note missed says when it asked: the latest is the note.
    const times = copies.flatMap((h) => (h.grantedAt === undefined ? [] : [h.grantedAt]));
    const grantedAt = times.length === 0 ? undefined : Math.max(...times);
    holders.push({ ...first, grantedAt, ttlLeft: ttls[majority - 1] ?? first.ttlLeft, fencingToken: agreed });
  }
  const last = maxOf(nodes.map((n) => n.lastFencingToken));
  return { name, primitive, holders, ...quorumWaiters(views), lastFencingToken: last, nodes };
}

/**
 * A quorum's waiters: a mutex's are recorded on each node their attempts found the lock held on
 * (acquire-recorded.lua), so every waiter any node records is listed once, in the order they
 * began to wait, with the latest of its nodes' deadlines. Undefined where no node records any
 * (the other primitives do not run on a quorum).
 */
function quorumWaiters(views: { view: Inspection | undefined }[]): Pick<Inspection, 'waiters' | 'queued'> {
  const recorded = views.map(({ view }) => view?.waiters).filter((w) => w !== undefined);
  if (recorded.length === 0) return { waiters: undefined };
  const byToken = new Map<string, Waiter>();
  for (const waiter of recorded.flat()) {
    const seen = byToken.get(waiter.token);
    if (seen === undefined || waiter.deadlineIn > seen.deadlineIn) byToken.set(waiter.token, waiter);
  }
  const waiters = [...byToken.values()].sort((a, b) => (a.since ?? 0) - (b.since ?? 0));
  return { waiters, queued: waiters.length };
}

/** The largest of some bigints (Math.max takes numbers only), 0n for none. */
function maxOf(values: readonly bigint[]): bigint {
  let max = 0n;
  for (const value of values) if (value > max) max = value;
  return max;
}
