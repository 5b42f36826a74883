import { parseStamp } from '../base/owner.ts';
import { optionalText } from '../base/replies.ts';
import type { Primitive } from '../options/inspect.ts';
import type { Script } from '../scripts/index.ts';

/** One holder of a lease, as Redis has it. */
export interface Holder {
  /** The `owner` the holder acquired with; undefined when written by a leasehold without owners. */
  owner: string | undefined;
  /** When the holder asked for the lease (epoch ms by its own clock; for a fair lock or a
   * waiting writer, when it joined the line). */
  since: number | undefined;
  /**
   * When the holder got the lease (epoch ms by its own clock). A holder that waited notes it in
   * Redis as it gets the lease (src/scripts/note-granted.lua); one whose first attempt got it
   * notes nothing, and this is `since`, which that attempt carried. Equal to `since`, then, for
   * a holder that did not wait, and for one whose note did not reach Redis (docs/inspection.md).
   */
  grantedAt: number | undefined;
  /** Remaining TTL in ms by Redis's clock (-1: the key has no TTL). */
  ttlLeft: number;
  /** The holder's fencing token, where Redis records it (a mutex, fair lock, writer, leader);
   * undefined for semaphore permits and readers, which share a counter. */
  fencingToken: bigint | undefined;
  /** The holder's random token (`lease.token`), to tell holders apart. */
  token: string;
  /** rwlock: whether this holder reads or writes. */
  role?: 'reader' | 'writer';
  /** semaphore: how many permits this holder has. */
  permits?: number;
  /** election: the value the leader proclaimed. */
  value?: string;
}

/**
 * One waiter that the primitive records in Redis: the fair lock's queue, a read-write lock's
 * waiting writers, the waiters registered for a direct grant (mutex, semaphore, readers), an
 * election's candidates.
 */
export interface Waiter {
  owner: string | undefined;
  /** When it started waiting (epoch ms by its own clock). */
  since: number | undefined;
  token: string;
  /**
   * ms until Redis drops it unless it shows a sign of life (its attempts push this back). For a
   * waiter registered for a direct grant, when its queue lapses: a dead waiter leaves earlier, at
   * the first grant that finds nobody listening.
   */
  deadlineIn: number;
  /**
   * rwlock: whether it waits to read or to write. mutex: 'multiLock' for a multiLock that wants
   * this name among others (recorded on each of its names; the same `token` on each).
   */
  role?: 'reader' | 'writer' | 'multiLock';
}

/** What one node says about a name (quorum mode has one per node). */
export interface NodeInspection {
  /** The node's URL (credentials removed). */
  node: string;
  holders: Holder[];
  /** The node's fencing counter: the last token it issued (0 when never). */
  lastFencingToken: bigint;
  /** Why the node could not be read. */
  error?: string;
}

/**
 * The state of one primitive of one name. Returned by `lh.inspect()` and `lh.list()`.
 */
export interface Inspection {
  name: string;
  primitive: Primitive;
  /** Who holds it now (empty when free). In quorum mode: the holders a majority of nodes agree on. */
  holders: Holder[];
  /**
   * Who waits, in line order, where the primitive records waiters in Redis: the fair lock's
   * queue, a read-write lock's waiting writers and readers, the mutex's and semaphore's waiters
   * registered for a direct grant, an election's candidates (in the order they began to wait).
   * Undefined where waiters are only local to their processes: the mutex and the semaphore where
   * no waiter registers for a direct grant (quorum mode, the memory backend); a multiLock's
   * waiters are not recorded either.
   */
  waiters: Waiter[] | undefined;
  /** The last fencing token issued for this name and primitive (0 when never). */
  lastFencingToken: bigint;
  /** semaphore: permits in use (may exceed the holders listed, which are capped by `limit`). */
  permitsInUse?: number;
  /** How many wait, where `waiters` is defined (may exceed those listed, which are capped). */
  queued?: number;
  /** Quorum mode: what each node says. */
  nodes?: NodeInspection[];
}

/**
 * How one primitive is read for `lh.inspect()`, `lh.list()`, `leasehold status`, `top` and the
 * dashboard: its own read-only script (src/scripts/inspect-<primitive>.lua), which of its layout's
 * keys mark that a name has state (SCAN finds names by them), and how the reply reads.
 */
export interface InspectionSpec<R extends string> {
  readonly script: Script;
  /** The script's KEYS, by role, in order. */
  readonly keys: readonly R[];
  /**
   * The roles whose keys hold state worth listing (not release counters or turn keys): SCAN finds
   * names by them, and `top` and the dashboard read a name again when one changes (its waiters too).
   */
  readonly state: readonly R[];
  /** The roles whose keys holders hold: grant notes live beside them (src/base/grant-note-format.ts). */
  readonly held: readonly R[];
  /** The reply, `{now (server ms), ...}`, as an Inspection; undefined when nothing exists. */
  parse(name: string, reply: readonly unknown[]): Inspection | undefined;
}

/** A number from a reply (NaN for nil). */
export const num = (v: unknown): number => Number(optionalText(v) ?? Number.NaN);
/** A fencing counter from a reply (0 for nil: never issued, or expired). */
export const fence = (v: unknown): bigint => BigInt(optionalText(v) ?? '0');

/** A flat `{member, score, ...}` reply as pairs. */
export function pairs(v: unknown): [string, number][] {
  const flat = Array.isArray(v) ? v : [];
  const out: [string, number][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([optionalText(flat[i]) ?? '', num(flat[i + 1])]);
  return out;
}

/** A holder from its stored value (src/base/owner.ts). */
export function holder(value: string, ttlLeft: number, fencingToken: bigint | undefined): Holder {
  const { token, owner, since } = parseStamp(value);
  return { owner, since, grantedAt: since, ttlLeft, fencingToken, token };
}

/**
 * The waiters registered for a direct grant, in arrival order, from an inspect script's `{queued,
 * {waiter, ...}, queue pttl}`; each is dropped by Redis when the queue lapses (its PTTL).
 */
export function registered(members: unknown, lapse: unknown, role?: 'reader'): Waiter[] {
  const deadlineIn = Math.max(0, num(lapse));
  return (Array.isArray(members) ? members : []).map((member): Waiter => {
    const { token, owner, since } = parseStamp(optionalText(member) ?? '');
    return { owner, since, token, deadlineIn, ...(role === undefined ? {} : { role }) };
  });
}

/** A waiter from its stored value and its deadline (server ms). */
export function waiter(value: string, deadline: number, now: number): Waiter {
  const { token, owner, since } = parseStamp(value);
  return { owner, since, token, deadlineIn: Math.max(0, deadline - now) };
}
