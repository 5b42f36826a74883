import { MemoryBackend } from '../memory/backend.ts';
import { runCommand } from '../memory/commands.ts';
import { type Row, toEntry, toRow } from './codec.ts';
import { commandKeys } from './keys.ts';

/** Runs one command of a script (redis.call) or a plain command. */
export type Host = (args: string[]) => unknown;

/** What a run over rows did. */
export interface ScratchRun<T> {
  /** The reply, or the error the script or command replied with (its writes before it stand). */
  readonly outcome: { ok: true; reply: T } | { ok: false; error: Error };
  /** Rows to write back, and keys to delete (changed, deleted or found expired). */
  readonly upserts: Row[];
  readonly deletes: string[];
  /** PUBLISH calls that reached a subscriber, in order. */
  readonly published: [channel: string, message: string][];
  /** Channels whose subscriber was assumed present (`assume`): the commit must check them. */
  readonly assumed: string[];
  /**
   * The run drew a fencing token (INCR): its commit must reach the WAL before the token reaches
   * anyone, so that no crash can roll the counter back below a token already handed out.
   */
  readonly durable: boolean;
}

/** The run published on channels whose subscribers it has not counted: count them and run again. */
export class UncountedChannels extends Error {
  readonly channels: string[];
  constructor(channels: string[]) {
    super(`channels not counted: ${channels.join(', ')}`);
    this.channels = channels;
  }
}

/** The run touched keys it had not loaded (and locked): load them and run again. */
export class MissingKeys extends Error {
  readonly keys: string[];
  constructor(keys: string[]) {
    super(`keys not loaded: ${keys.join(', ')}`);
    this.keys = keys;
  }
}

/**
 * Runs `body` (a script in the Lua VM, or one command) against the rows a transaction read and
 * locked, exactly as the memory backend runs it against its own keys: a scratch store holds the
 * rows, on the PostgreSQL server's clock frozen at `nowMicros` (the script's TIME and every TTL
 * read inside it see one instant, as in Redis). `loaded` holds every key read, null for an
 * absent one. A command that names a key outside it (a script may, as the fair lock's turn keys
 * do) ends the run with MissingKeys: nothing of the run is kept, and the caller locks and reads
 * those keys in the same transaction and runs it again from the start (a script's outcome
 * depends only on its keys and its TIME).
 */
export function runOverRows<T>(
  loaded: ReadonlyMap<string, Row | null>,
  nowMicros: number,
  body: (host: Host) => T,
  /** A script's run: status replies as `{ ok }`, as Lua sees them (false: a plain command's). */
  statuses: boolean,
  /** Subscribers counted per channel in this transaction (PUBLISH's reply). */
  reached: ReadonlyMap<string, number> = new Map(),
  /**
   * A channel not counted yet has its subscriber (PUBLISH replies 1), to be checked by the
   * commit (`assumed`); false: the run stops with UncountedChannels instead.
   */
  assume = false,
): ScratchRun<T> {
  const changed = new Set<string>();
  const store = new MemoryBackend({
    clock: { now: () => nowMicros / 1000, at: (ms) => ms, micros: () => nowMicros },
    changed: (key) => changed.add(key),
  });
  for (const [key, row] of loaded) if (row !== null) store.load(key, toEntry(row));
  const missing: string[] = [];
  const uncounted: string[] = [];
  const assumed: string[] = [];
  let durable = false;
  const published: [string, string][] = [];
  const host: Host = (args) => {
    const name = (args[0] ?? '').toUpperCase();
    if (name === 'PUBLISH') {
      // PUBLISH replies with the subscribers it reached: a direct grant (scripts/includes/
      // grant-next.lua) to a waiter nobody listens for any more is undone. NOTIFY counts nobody,
      // so the driver counts them (a subscriber holds a session advisory lock on its channel) and
      // runs the script again with the count.
      const channel = args[1] ?? '';
      let count = reached.get(channel);
      if (count === undefined && assume) {
        assumed.push(channel);
        count = 1;
      }
      if (count === undefined) {
        uncounted.push(channel);
        throw new Error('ERR leasehold: subscribers not counted (the run restarts with them)');
      }
      if (count > 0) published.push([channel, args[2] ?? '']);
      return count;
    }
    if (name === 'INCR' || name === 'INCRBY') durable = true;
    const absent = commandKeys(args).filter((key) => !loaded.has(key));
    if (absent.length > 0) {
      missing.push(...absent);
      throw new Error('ERR leasehold: key not loaded (the run restarts with it)');
    }
    return runCommand(store, args, undefined, statuses);
  };
  let outcome: ScratchRun<T>['outcome'];
  try {
    outcome = { ok: true, reply: body(host) };
  } catch (error) {
    outcome = { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
  if (missing.length > 0) throw new MissingKeys([...new Set(missing)]);
  if (uncounted.length > 0) throw new UncountedChannels([...new Set(uncounted)]);
  const upserts: Row[] = [];
  const deletes: string[] = [];
  for (const key of changed) {
    const entry = store.entry(key);
    if (entry === undefined) {
      if (loaded.get(key) != null) deletes.push(key);
    } else upserts.push(toRow(key, entry));
  }
  return { outcome, upserts, deletes, published, assumed: [...new Set(assumed)], durable };
}
