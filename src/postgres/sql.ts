// The statements of the command path, each batch one simple-protocol string (one round trip).
import type { Row } from './codec.ts';
import { literal, type PgNames, textArray } from './names.ts';

/** A NOTIFY payload stays below PostgreSQL's 8000-byte limit. */
const PAYLOAD_BYTES = 7_000;

/**
 * Opens a transaction, locks `keys` and reads them with the server's clock. READ COMMITTED,
 * whatever the session's default, so that the read (its own statement, its own snapshot) sees
 * every commit made before the locks were granted. `timeout` bounds the wait for a lock and, in
 * the server, the time the transaction may sit idle: a client that stops between its two round
 * trips (paused, partitioned) is cut off by the server, which releases its locks, instead of
 * blocking every other caller of those keys for as long as its connection lives.
 */
export function openAndRead(names: PgNames, keys: readonly string[], timeout: number): string {
  const ms = Math.max(1, Math.ceil(timeout));
  return [
    'BEGIN ISOLATION LEVEL READ COMMITTED',
    // A stalled peer's locks are freed at half the time a lock may be waited for, so that the
    // waiters behind it get through instead of timing out with it.
    `SET LOCAL lock_timeout = ${ms}`,
    `SET LOCAL idle_in_transaction_session_timeout = ${Math.max(1, Math.floor(ms / 2))}`,
    // A lease is as durable as a Redis key without persistence, and half the commit's time is
    // its WAL flush: a crash can lose the last moments of commits, which leasehold treats as a
    // Redis restart (the server's start time changes: every lease on it is lost; fencing
    // tokens stay floored by the server's clock). docs/postgres.md, "Durability".
    'SET LOCAL synchronous_commit = off',
    ...lockAndRead(names, keys),
  ].join(';\n');
}

/**
 * Transaction-scoped advisory locks on `keys` (on a hash of the channel and the key: absent keys
 * are locked too, which row locks cannot do), taken in one order by every caller so that two
 * transactions never wait for each other; then the rows and the server's clock in microseconds.
 */
export function lockAndRead(names: PgNames, keys: readonly string[]): string[] {
  const array = textArray(keys);
  const lock =
    keys.length === 0
      ? []
      : [
          `SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(${literal(names.channel)} || k, 0) AS h ` +
            `FROM unnest(${array}) AS k ORDER BY h OFFSET 0) AS s`,
        ];
  return [
    ...lock,
    'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS now, ' +
      `coalesce((SELECT json_agg(json_build_array(key, type, value, expire_at)) FROM ${names.qualified} ` +
      `WHERE key = ANY(${array})), '[]'::json) AS rows`,
  ];
}

/** The rows of the read: [key, type, value, expire_at] as json_build_array gives them. */
export function parseRows(rows: unknown): Row[] {
  const list = (typeof rows === 'string' ? JSON.parse(rows) : rows) as [
    string,
    Row['type'],
    string,
    number | null,
  ][];
  return list.map(([key, type, value, expireAt]) => ({ key, type, value, expireAt }));
}

/** What a transaction writes before COMMIT. */
export interface Writes {
  upserts: readonly Row[];
  deletes: readonly string[];
  /** Keys whose change every listener hears, with the writer's id (NOLOOP). */
  changed: readonly string[];
  /** PUBLISH calls of the script, forwarded as they are. */
  published: readonly (readonly [string, string])[];
  writer: string;
}

/** The writes, their notifications (delivered at commit, to every listener) and COMMIT. */
export function writeAndCommit(names: PgNames, writes: Writes): string {
  const out: string[] = [];
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
  const payloads = [
    ...changePayloads(writes.writer, writes.changed),
    ...writes.published.map(([channel, message]) =>
      JSON.stringify({ w: writes.writer, p: [channel, message] }),
    ),
  ];
  if (payloads.length > 0) {
    out.push(
      `SELECT ${payloads.map((p) => `pg_notify(${literal(names.channel)}, ${literal(p)})`).join(', ')}`,
    );
  }
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
