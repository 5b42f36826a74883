// The statements of the command path, each batch one simple-protocol string (one round trip).
import { createHash } from 'node:crypto';
import type { Row } from './codec.ts';
import { literal, type PgNames, textArray } from './names.ts';

/** A NOTIFY payload stays below PostgreSQL's 8000-byte limit. */
const PAYLOAD_BYTES = 7_000;

/** The server's clock in microseconds since the epoch, as text (a bigint). */
const CLOCK = 'floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text';

/**
 * The advisory lock id of `key`: 64 bits of SHA-1 over the channel and the key, computed here so
 * that the statement is a plain list of calls (no set-returning subquery to plan on every call).
 * Two keys that share an id only serialize each other's calls.
 */
export function lockId(names: PgNames, key: string): bigint {
  return createHash('sha1').update(names.channel).update('\0').update(key).digest().readBigInt64BE(0);
}

/** pg_advisory_xact_lock calls for `keys`, in ascending id order, without repeats. */
function lockCalls(names: PgNames, keys: readonly string[]): string[] {
  const ids = [...new Set(keys.map((key) => lockId(names, key)))].sort((a, b) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return ids.map((id) => `pg_advisory_xact_lock(${id})`);
}

/** The rows of `keys`, read in a statement of its own (a snapshot taken after the locks). */
function readRows(names: PgNames, keys: readonly string[]): string {
  return `SELECT key, type, value, expire_at FROM ${names.qualified} WHERE key IN (${keys.map(literal).join(', ')})`;
}

/**
 * Opens a transaction, locks `keys` and reads their rows and the server's clock: three statements
 * in one round trip. READ COMMITTED, whatever the session's default, so that the read (its own
 * statement, its own snapshot) sees every commit made before the locks were granted. The
 * settings are the transaction's own (SET LOCAL semantics, so PgBouncer in transaction mode is
 * fine):
 * - lock_timeout: a lock waited for at most `timeout`;
 * - idle_in_transaction_session_timeout, half of it: a client that stops between its two round
 *   trips (paused, partitioned) is cut off by the server, which frees its locks, instead of
 *   blocking every caller of those keys for as long as its connection lives;
 * - synchronous_commit off: a lease is as durable as a Redis key without persistence, and half a
 *   commit's time is its WAL flush. A crash can lose the last moments of commits, which leasehold
 *   treats as a Redis restart (docs/postgres.md, "Durability").
 * The clock is read after the locks (the select list runs left to right).
 */
export function openAndRead(names: PgNames, keys: readonly string[], timeout: number): string {
  const ms = Math.max(2, Math.ceil(timeout));
  const settings = [
    `set_config('lock_timeout', '${ms}', true)`,
    `set_config('idle_in_transaction_session_timeout', '${Math.floor(ms / 2)}', true)`,
    "set_config('synchronous_commit', 'off', true)",
  ];
  return [
    'BEGIN ISOLATION LEVEL READ COMMITTED',
    `SELECT ${[...settings, ...lockCalls(names, keys), `${CLOCK} AS now`].join(', ')}`,
    ...(keys.length === 0 ? [] : [readRows(names, keys)]),
  ].join(';\n');
}

/** Locks and reads more keys inside the transaction (a script that named keys it did not declare). */
export function lockAndRead(names: PgNames, keys: readonly string[]): string {
  return [`SELECT ${lockCalls(names, keys).join(', ')}`, readRows(names, keys)].join(';\n');
}

/** The SQLSTATE of a commit whose assumed subscriber was gone (writeAndCommit). */
export const SUBSCRIBER_GONE = '22012';

/**
 * The advisory lock id marking a subscriber of `channel` present: held (exclusively, for its
 * session) by the listening connection of the instance that subscribed.
 */
export const presenceId = (names: PgNames, channel: string): bigint =>
  lockId(names, `\0presence\0${channel}`);

/**
 * Counts the subscribers of `channels` (0 or 1 each: a channel is one instance's): a shared
 * transaction lock on a channel's presence id is refused while its subscriber holds it.
 */
export function countSubscribers(names: PgNames, channels: readonly string[]): string {
  return `SELECT ${channels
    .map((channel, i) => `NOT pg_try_advisory_xact_lock_shared(${presenceId(names, channel)}) AS c${i}`)
    .join(', ')}`;
}

/** The rows of a read, from node-postgres (expire_at, a bigint, comes as text). */
export function parseRows(rows: readonly Record<string, unknown>[]): Row[] {
  return rows.map((r) => ({
    key: r['key'] as string,
    type: r['type'] as Row['type'],
    value: r['value'] as string,
    expireAt: r['expire_at'] === null ? null : Number(r['expire_at']),
  }));
}

/** What a transaction writes before COMMIT. */
export interface Writes {
  upserts: readonly Row[];
  deletes: readonly string[];
  /** Keys whose change every listener hears, with the writer's id (NOLOOP). */
  changed: readonly string[];
  /** PUBLISH calls of the script, forwarded as they are. */
  published: readonly (readonly [string, string])[];
  /** Channels whose subscriber the run assumed present: checked first, or the commit fails. */
  assumed?: readonly string[];
  /** Commit with the WAL flush (the run drew a fencing token). */
  durable?: boolean;
  writer: string;
}

/** The writes, their notifications (delivered at commit, to every listener) and COMMIT. */
export function writeAndCommit(names: PgNames, writes: Writes): string {
  const out: string[] = [];
  const assumed = writes.assumed ?? [];
  if (assumed.length > 0) {
    // The subscriber is there when its presence lock refuses a shared one; if it is gone, a
    // division by zero aborts the transaction (SQLSTATE 22012: SUBSCRIBER_GONE) before any write,
    // and the call runs again with the subscribers counted first.
    out.push(
      `SELECT ${assumed.map((channel) => `1 / (NOT pg_try_advisory_xact_lock_shared(${presenceId(names, channel)}))::int`).join(', ')}`,
    );
  }
  if (writes.upserts.length > 0) {
    const values = writes.upserts.map(
      (r) =>
        `(${literal(r.key)}, ${literal(r.type)}, ${literal(r.value)}, ${r.expireAt === null ? 'NULL' : String(r.expireAt)})`,
    );
    out.push(
      `INSERT INTO ${names.qualified} (key, type, value, expire_at) VALUES ${values.join(', ')} ` +
        'ON CONFLICT (key) DO UPDATE SET type = EXCLUDED.type, value = EXCLUDED.value, expire_at = EXCLUDED.expire_at',
    );
  }
  if (writes.deletes.length > 0) {
    out.push(`DELETE FROM ${names.qualified} WHERE key = ANY(${textArray(writes.deletes)})`);
  }
  // Grants first: a waiter that hears its grant before the key's change holds without a call.
  const payloads = [
    ...writes.published.map(([channel, message]) =>
      JSON.stringify({ w: writes.writer, p: [channel, message] }),
    ),
    ...changePayloads(writes.writer, writes.changed),
  ];
  if (payloads.length > 0) {
    out.push(
      `SELECT ${payloads.map((p) => `pg_notify(${literal(names.channel)}, ${literal(p)})`).join(', ')}`,
    );
  }
  // A fencing counter's increment is flushed before its token is handed out: a crash must not
  // roll the counter back below a token someone holds (the rest of a lease is as durable as a
  // Redis key without persistence: openAndRead).
  if (writes.durable === true) out.push("SELECT set_config('synchronous_commit', 'on', true)");
  out.push('COMMIT');
  return out.join(';\n');
}

/** `{"w": writer, "k": [keys]}` payloads, as many as the keys need; `null`: everything changed. */
export function changePayloads(writer: string, keys: readonly string[] | null): string[] {
  if (keys === null) return [JSON.stringify({ w: writer, k: null })];
  const out: string[] = [];
  let batch: string[] = [];
  let bytes = 0;
  for (const key of keys) {
    const size = Buffer.byteLength(JSON.stringify(key)) + 1;
    if (batch.length > 0 && bytes + size > PAYLOAD_BYTES) {
      out.push(JSON.stringify({ w: writer, k: batch }));
      batch = [];
      bytes = 0;
    }
    batch.push(key);
    bytes += size;
  }
  if (batch.length > 0) out.push(JSON.stringify({ w: writer, k: batch }));
  return out;
}
