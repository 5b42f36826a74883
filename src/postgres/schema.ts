import type { Query } from './calls.ts';
import { literal, type PgNames } from './names.ts';

/**
 * The one table leasehold keeps: a key per row, as Redis keeps them (a lock's key, its fencing
 * counter, a semaphore's permits...), with the Redis type of the value and its expiry on the
 * server's clock. The index serves the sweep of expired rows.
 */
export function migrationStatements(names: PgNames, createSchema: boolean): string[] {
  return [
    ...(createSchema ? [`CREATE SCHEMA IF NOT EXISTS "${names.schema}"`] : []),
    `CREATE TABLE IF NOT EXISTS ${names.qualified} (` +
      'key text COLLATE "C" PRIMARY KEY, type text NOT NULL, value text NOT NULL, expire_at bigint)',
    `CREATE INDEX IF NOT EXISTS "${names.table}_expire_at" ON ${names.qualified} (expire_at) WHERE expire_at IS NOT NULL`,
  ];
}

/** What the server said about the deployment's table before any change. */
export interface SchemaState {
  readonly standby: boolean;
  readonly schema: boolean;
  readonly table: boolean;
  readonly version: string;
  /** pg_postmaster_start_time(): changes when the server restarts (docs/postgres.md). */
  readonly started: string;
}

export async function schemaState(query: Query, names: PgNames): Promise<SchemaState> {
  const [result] = await query(
    `SELECT pg_is_in_recovery() AS standby, current_setting('server_version') AS version, ` +
      'pg_postmaster_start_time()::text AS started, ' +
      `EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${literal(names.schema)}) AS schema, ` +
      `to_regclass(${literal(names.qualified)}) IS NOT NULL AS "table"`,
  );
  const row = result?.rows[0] as SchemaState;
  return row;
}

/** A standby was given: leasehold writes on every call. */
export function standbyError(): Error {
  return new Error(
    'the server is a standby (pg_is_in_recovery() is true): leasehold needs the read-write primary',
  );
}

/**
 * Creates the schema (when missing), the table and its index, in one transaction under an
 * advisory lock, so that instances starting together do not trip over each other's CREATE.
 * Needs CREATE on the database only when the schema is missing, and on the schema otherwise: no
 * superuser. Returns what it created.
 */
export async function migrate(query: Query, names: PgNames): Promise<{ created: boolean; version: string }> {
  const state = await schemaState(query, names);
  if (state.standby) throw standbyError();
  if (state.table) return { created: false, version: state.version };
  await query(
    [
      'BEGIN',
      `SELECT pg_advisory_xact_lock(hashtextextended(${literal(`leasehold-migrate:${names.channel}`)}, 0))`,
      ...migrationStatements(names, !state.schema),
      'COMMIT',
    ].join(';\n'),
  );
  return { created: true, version: state.version };
}
