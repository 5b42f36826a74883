import { checkKnownKeys, checkObject, fail } from './check.ts';

/** The `postgres` connect option (docs/postgres.md). */
export interface PostgresOptions {
  /** postgres:// or postgresql:// URL of the primary. Leave out with `pool`. */
  url?: string;
  /** A node-postgres `Pool` of your own: leasehold borrows connections and leaves it open. */
  pool?: unknown;
  /**
   * Where the notification connection (LISTEN) goes, when `url`/`pool` point at PgBouncer in
   * transaction mode: LISTEN is session state, so it needs the server (or a session-mode pool).
   * @default the URL, or the pool's own settings
   */
  listenUrl?: string;
  /** @default 'leasehold' */
  schema?: string;
  /** @default 'leasehold_keys' */
  table?: string;
  /**
   * Create the schema and table on first use when missing. false: connect() fails with a hint to
   * run `leasehold migrate` (for deployments whose application role may not create tables).
   * @default true
   */
  migrate?: boolean;
}

/** `postgres`, resolved. */
export interface ValidPostgres {
  url: string | undefined;
  pool: unknown;
  listenUrl: string | undefined;
  schema: string;
  table: string;
  migrate: boolean;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A node-postgres Pool (or anything that lends clients the way it does). */
export function isPgPool(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v['connect'] === 'function' &&
    typeof v['query'] === 'function' &&
    typeof v['totalCount'] === 'number'
  );
}

function checkPgUrl(value: unknown, option: string): string {
  if (typeof value !== 'string' || !/^postgres(ql)?:\/\//.test(value)) {
    fail(option, 'a postgres:// or postgresql:// URL', value);
  }
  try {
    new URL(value);
  } catch {
    fail(option, 'a postgres:// or postgresql:// URL', value);
  }
  return value;
}

function checkIdentifier(value: unknown, option: string): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    fail(option, 'a plain SQL identifier (letters, digits, _; at most 63; not starting with a digit)', value);
  }
  return value;
}

/** `postgres`: a URL, or { url | pool, listenUrl, schema, table, migrate }. */
export function checkPostgres(value: unknown): ValidPostgres | undefined {
  if (value === undefined) return undefined;
  const base = { listenUrl: undefined, schema: 'leasehold', table: 'leasehold_keys', migrate: true };
  if (typeof value === 'string') return { ...base, url: checkPgUrl(value, 'postgres'), pool: undefined };
  if (isPgPool(value)) return { ...base, url: undefined, pool: value };
  const o = checkObject(value, 'postgres');
  checkKnownKeys(o, ['url', 'pool', 'listenUrl', 'schema', 'table', 'migrate'], 'postgres');
  const pool = o['pool'];
  if (pool !== undefined && !isPgPool(pool)) fail('postgres.pool', 'a node-postgres Pool', pool);
  const url = o['url'] === undefined ? undefined : checkPgUrl(o['url'], 'postgres.url');
  if ((url === undefined) === (pool === undefined)) {
    fail('postgres', 'exactly one of "url" and "pool"', value);
  }
  const migrate = o['migrate'] ?? true;
  if (typeof migrate !== 'boolean') fail('postgres.migrate', 'true or false', migrate);
  const schema = o['schema'] === undefined ? base.schema : checkIdentifier(o['schema'], 'postgres.schema');
  const table = o['table'] === undefined ? base.table : checkIdentifier(o['table'], 'postgres.table');
  if (`${schema}.${table}`.length > 63) {
    fail(
      'postgres.table',
      'a schema and table name of at most 62 characters together (the channel name)',
      table,
    );
  }
  return {
    url,
    pool,
    listenUrl: o['listenUrl'] === undefined ? undefined : checkPgUrl(o['listenUrl'], 'postgres.listenUrl'),
    schema,
    table,
    migrate,
  };
}
