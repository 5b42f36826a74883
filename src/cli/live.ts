import { EventEmitter } from 'node:events';
import { after } from '../base/timer.ts';
import { newToken } from '../base/token.ts';
import type { Driver } from '../driver/types.ts';
import { Inspector, isLive } from '../inspect/inspector.ts';
import { type Primitive, parseKey } from '../inspect/key-names.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { type Connection, redisFailure, refusedAccess, type Stopper, stopOnSignals } from './common.ts';
import { openTargets, weakestProof } from './targets.ts';

/** How often the view re-reads everything when pushes are unproven. */
export const POLL_MS = 1_000;
/** How long start() waits for the notification canary's first verdict. */
const PROOF_WAIT_MS = 5_000;

/** A change the view saw between two readings of one name. */
export interface TimelineEvent {
  time: number;
  /** acquired: free -> held; handoff: one holder -> another; released / expired: held -> free. */
  type: 'acquired' | 'handoff' | 'released' | 'expired' | 'forced';
  name: string;
  primitive: Primitive;
  owner: string | undefined;
  previousOwner?: string | undefined;
  fencingToken?: bigint | undefined;
}

/** One row of the view: the latest inspection, and how often it changed (for "busiest"). */
export interface LiveEntry {
  key: string;
  inspection: Inspection;
  changes: number;
  /** Local epoch ms when it was read (ttlLeft counts from here). */
  readAt: number;
}

interface LiveEvents {
  entry: [LiveEntry];
  remove: [{ key: string; name: string; primitive: Primitive }];
  timeline: [TimelineEvent];
  mode: [{ mode: 'tracking' | 'polling'; reason: string | undefined }];
  error: [Error];
}

/**
 * The state of every name under a prefix, kept current from invalidation pushes: a dedicated
 * connection tracks in BCAST mode with PREFIX `<prefix>:{<names>` (every write under it is pushed,
 * no read needed), and only the names a push names are read again, on a second connection that
 * tracks nothing. While nothing changes, nothing is sent to Redis: no polling, no timers, except
 * one per held name at its TTL (an expiry is not pushed in time, DESIGN.md §2). Only live names
 * (someone holds or waits) are shown: a name whose lease was released leaves the view, though its
 * fencing counter lives on for a while.
 */
export class LiveView extends EventEmitter<LiveEvents> {
  readonly #conn: Connection;
  readonly #names: string;
  readonly #limit: number;
  readonly entries = new Map<string, LiveEntry>();
  /** The connections that read (tracking nothing): one, or one per node of a quorum. */
  #readers: Driver[] = [];
  /** The connections that track in BCAST mode: one (every master of a Cluster), or one per node. */
  #watchers: Driver[] = [];
  #inspector: Inspector | undefined;
  readonly #dirty = new Set<string>();
  #everything = false;
  #flushing: Promise<void> | undefined;
  readonly #expiry = new Map<string, () => void>();
  #poll: NodeJS.Timeout | undefined;
  #closed = false;
  #scheduled = false;
  #firstProof: () => void = () => {};
  #starting = false;
  #startError: Error | undefined;
  mode: 'tracking' | 'polling' = 'polling';
  /** Why the view polls (the canary's failure), while it does. */
  modeReason: string | undefined;
  /** Redis commands sent since start (tests check that a quiet lock costs none). */
  reads = 0;

  constructor(conn: Connection, names: string, limit: number) {
    super();
    this.#conn = conn;
    this.#names = names;
    this.#limit = limit;
  }

  async start(): Promise<void> {
    const readers = await openTargets(this.#conn, false);
    this.#readers = readers.drivers;
    this.#inspector = new Inspector(
      readers.drivers.map((driver, i) => ({ label: readers.labels[i] ?? 'redis', driver })),
      this.#conn.prefix,
    );
    const watched = `${this.#conn.prefix}:{${this.#names}`;
    const canary = `${this.#conn.prefix}:{leasehold-canary}`;
    // A Cluster master's canary lives in a slot it serves: `<prefix>:{canary-<n>}:...`.
    const canaries = [canary, `${this.#conn.prefix}:{canary-`];
    // Redis refuses overlapping BCAST prefixes: `watched` covers the canaries when names is ''.
    const bcast = [watched, ...canaries.filter((c) => !c.startsWith(watched))];
    const proven = new Promise<void>((resolve) => {
      this.#firstProof = resolve;
    });
    const watchers = await openTargets(this.#conn, true, {
      bcast,
      canaryKey: () => `${canary}:${newToken()}`,
      handlers: {
        invalidate: (keys) => this.#invalidate(keys),
        reset: () => this.#invalidate(null),
        disconnected: (error) => this.emit('error', error ?? new Error('the connection to Redis closed')),
        proven: () => this.#proven(),
      },
    });
    this.#watchers = watchers.drivers;
    // A proof may have come during connect, before the watchers were known: look again.
    this.#proven();
    // The mode the view starts in is the canary's verdict: wait for it (it needs a push).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([proven, new Promise((resolve) => (timer = setTimeout(resolve, PROOF_WAIT_MS)))]);
    clearTimeout(timer);
    // A refused permission on the first read fails start(): a view that can never read is no view.
    this.#starting = true;
    await this.refresh();
    this.#starting = false;
    const refused = this.#startError;
    if (refused !== undefined) redisFailure(refused, `reading the names under "${this.#names}"`);
  }

  /** The connections that read (tracking nothing), for the dashboard's force-release. */
  get readers(): readonly Driver[] {
    return this.#readers;
  }

  /** The server's version, for the dashboard's header (Valkey also reports a redis_version). */
  async serverVersion(): Promise<string> {
    const info = String(await this.#readers[0]?.command(['INFO', 'server']));
    const valkey = /valkey_version:(\S+)/.exec(info)?.[1];
    if (valkey !== undefined) return `Valkey ${valkey}`;
    const postgres = /postgresql_version:(\S+)/.exec(info)?.[1];
    if (postgres !== undefined) return `PostgreSQL ${postgres}`;
    return `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown'}`;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    for (const cancel of this.#expiry.values()) cancel();
    await Promise.all([...this.#watchers, ...this.#readers].map((driver) => driver.close()));
  }

  /** Reads every name again (on connect, a reconnect, a FLUSHALL, and while polling). */
  refresh(): Promise<void> {
    this.#everything = true;
    return this.#flush();
  }

  /** Reads one name and primitive again now. */
  reread(name: string, primitive: Primitive): Promise<void> {
    this.#dirty.add(`${primitive}\u0000${name}`);
    return this.#flush();
  }

  /**
   * A canary finished. Pushes are trusted once every watcher proved them (a Cluster driver
   * answers for all its masters); until every proof is in, or with one failed, the view polls.
   */
  #proven(): void {
    const proof = weakestProof(this.#watchers);
    if (proof === undefined) return;
    this.#firstProof();
    clearInterval(this.#poll);
    this.#poll = undefined;
    const mode = proof.ok ? 'tracking' : 'polling';
    this.modeReason = proof.reason?.message;
    if (!proof.ok) {
      this.#poll = setInterval(() => void this.refresh(), POLL_MS);
      this.#poll.unref();
    }
    if (mode !== this.mode) {
      this.mode = mode;
      this.emit('mode', { mode, reason: proof.reason?.message });
    }
  }

  #invalidate(keys: readonly string[] | null): void {
    if (keys === null) this.#everything = true;
    else {
      for (const key of keys) {
        const at = parseKey(this.#conn.prefix, key);
        if (at?.name.startsWith(this.#names)) this.#dirty.add(`${at.primitive}\u0000${at.name}`);
      }
    }
    // Pushes for one change (the lock key and its fence counter) come in separate messages:
    // read once for all of them.
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  /** One reader at a time; pushes that arrive meanwhile are read in the next round. */
  #flush(): Promise<void> {
    if (this.#flushing !== undefined) return this.#flushing.then(() => this.#flush());
    if (!this.#everything && this.#dirty.size === 0) return Promise.resolve();
    this.#flushing = this.#round().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #round(): Promise<void> {
    const inspector = this.#inspector;
    if (inspector === undefined || this.#closed) return;
    try {
      if (this.#everything) {
        this.#everything = false;
        const found = await inspector.live(this.#names, undefined, this.#limit);
        this.reads += 1 + found.length;
        const fresh = new Set<string>();
        for (const inspection of found) {
          const key = `${inspection.primitive}\u0000${inspection.name}`;
          fresh.add(key);
          this.#dirty.delete(key);
          this.#apply(key, inspection.name, inspection.primitive, inspection);
        }
        // Shown names the scan did not find live (released, FLUSHALL, a DEL of every key) are
        // read once more: gone, or beyond the limit this time.
        for (const key of this.entries.keys()) if (!fresh.has(key)) this.#dirty.add(key);
      }
      const batch = [...this.#dirty].map((key) => {
        const [primitive, name] = key.split('\u0000') as [Primitive, string];
        return { key, name, primitive };
      });
      this.#dirty.clear();
      let i = 0;
      for await (const inspection of inspector.readEach(batch)) {
        const { key, name, primitive } = batch[i++]!;
        this.reads += 1;
        this.#apply(key, name, primitive, inspection);
      }
    } catch (error) {
      if (this.#starting && refusedAccess((error as Error).message)) this.#startError = error as Error;
      else if (!this.#closed) this.emit('error', error as Error);
    }
    if (this.#everything || this.#dirty.size > 0) await this.#round();
  }

  #apply(key: string, name: string, primitive: Primitive, read: Inspection | undefined): void {
    // Only live names are shown: a free lock whose fencing counter lives on is gone from the view.
    const next = read !== undefined && isLive(read) ? read : undefined;
    const previous = this.entries.get(key);
    this.#expiry.get(key)?.();
    this.#expiry.delete(key);
    if (next === undefined) {
      if (previous === undefined) return;
      this.entries.delete(key);
      this.#timeline(previous, undefined);
      this.emit('remove', { key, name, primitive });
      return;
    }
    // Names beyond --limit stay out, however they came (a scan stops there; pushes do not).
    if (previous === undefined && this.entries.size >= this.#limit) return;
    // "Busiest" counts changes of hands and of the line, not extensions.
    const changed = previous === undefined || signature(previous.inspection) !== signature(next);
    const entry: LiveEntry = {
      key,
      inspection: next,
      changes: (previous?.changes ?? 0) + (changed ? 1 : 0),
      readAt: Date.now(),
    };
    this.entries.set(key, entry);
    this.#timeline(previous, next);
    // An expiry is pushed late (seconds, on a busy server): look again when the TTL runs out.
    const ttls = next.holders.map((h) => h.ttlLeft).filter((t) => t >= 0);
    if (ttls.length > 0) {
      // after(): a TTL read from Redis may exceed setTimeout's 2^31-1 ms.
      this.#expiry.set(
        key,
        after(Math.min(...ttls) + 5, () => void this.reread(name, primitive)),
      );
    }
    this.emit('entry', entry);
  }

  /**
   * Compares the first holder before and after (the one a mutex, fair lock, writer or leader
   * has). A holder gone once its TTL had run out expired; earlier, it was released or deleted.
   */
  #timeline(before: LiveEntry | undefined, after: Inspection | undefined): void {
    const was = before?.inspection.holders[0];
    const now = after?.holders[0];
    const at = after ?? before?.inspection;
    if (at === undefined) return;
    const base = { time: Date.now(), name: at.name, primitive: at.primitive };
    if (now !== undefined && (was === undefined || was.token !== now.token)) {
      this.emit('timeline', {
        ...base,
        type: was === undefined ? 'acquired' : 'handoff',
        owner: now.owner,
        ...(was === undefined ? {} : { previousOwner: was.owner }),
        fencingToken: now.fencingToken,
      });
    } else if (now === undefined && was !== undefined && before !== undefined) {
      const expired = was.ttlLeft >= 0 && Date.now() >= before.readAt + was.ttlLeft - 20;
      this.emit('timeline', {
        ...base,
        type: expired ? 'expired' : 'released',
        owner: was.owner,
        fencingToken: was.fencingToken,
      });
    }
  }
}

/** Who holds and who waits, without TTLs: what changes when hands change. */
function signature(i: Inspection): string {
  return [...i.holders.map((h) => h.token), '|', ...(i.waiters ?? []).map((w) => w.token)].join(',');
}

/**
 * Starts `view` for `top` and the dashboard, with the signal handlers installed first (before
 * anything is printed: stopOnSignals says why); a start that fails removes them and closes it.
 */
export async function startLive(view: LiveView): Promise<Stopper> {
  const signals = stopOnSignals();
  try {
    await view.start();
  } catch (error) {
    signals.stop();
    await view.close().catch(() => {});
    throw error;
  }
  return signals;
}
