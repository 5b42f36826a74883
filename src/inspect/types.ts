import type { Primitive } from './layout.ts';

/** One holder of a lease, as Redis has it. */
export interface Holder {
  /** The `owner` the holder acquired with; undefined when written by a leasehold without owners. */
  owner: string | undefined;
  /** When the holder asked for the lease (epoch ms by its own clock; for a fair lock or a
   * waiting writer, when it joined the line). */
  since: number | undefined;
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

/** One waiter that the primitive records in Redis (fair lock queue, rwlock waiting writers). */
export interface Waiter {
  owner: string | undefined;
  /** When it started waiting (epoch ms by its own clock). */
  since: number | undefined;
  token: string;
  /** ms until Redis drops it unless it shows a sign of life (its attempts push this back). */
  deadlineIn: number;
  role?: 'writer';
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
   * Who waits, in line order, where the primitive records waiters in Redis (fair lock, rwlock's
   * waiting writers); undefined where waiters are only local to their processes (mutex,
   * semaphore, election candidates).
   */
  waiters: Waiter[] | undefined;
  /** The last fencing token issued for this name and primitive (0 when never). */
  lastFencingToken: bigint;
  /** semaphore: permits in use (may exceed the holders listed, which are capped by `limit`). */
  permitsInUse?: number;
  /** fair lock: waiters in the queue (may exceed those listed). */
  queued?: number;
  /** Quorum mode: what each node says. */
  nodes?: NodeInspection[];
}
