/**
 * Where leasehold keeps its rows in PostgreSQL, and how text becomes SQL. Every statement on the
 * command path is sent as one simple-protocol string (several statements, one round trip), so
 * values are escaped here rather than bound as parameters: the extended protocol allows one
 * statement per round trip.
 */

/** Schema, table and notification channel of one deployment. */
export interface PgNames {
  readonly schema: string;
  readonly table: string;
  /** `"schema"."table"`. */
  readonly qualified: string;
  /** The LISTEN/NOTIFY channel: `schema.table`, at most 63 bytes (PostgreSQL's identifier limit). */
  readonly channel: string;
}

export function pgNames(schema: string, table: string): PgNames {
  return {
    schema,
    table,
    qualified: `"${schema}"."${table}"`,
    channel: `${schema}.${table}`.slice(0, 63),
  };
}

/** A string literal: quotes doubled, and backslashes doubled under E'' (as node-postgres does). */
export function literal(text: string): string {
  if (text.includes('\0')) throw new Error('ERR PostgreSQL text cannot hold a NUL character');
  let backslash = false;
  let body = '';
  for (const ch of text) {
    if (ch === "'") body += "''";
    else if (ch === '\\') {
      body += '\\\\';
      backslash = true;
    } else body += ch;
  }
  return backslash ? ` E'${body}'` : `'${body}'`;
}

/** `ARRAY['a','b']::text[]` (an empty one typed too). */
export const textArray = (values: readonly string[]): string =>
  `ARRAY[${values.map(literal).join(',')}]::text[]`;

/** `"name"`, for a channel in LISTEN (quoted: it holds a dot). */
export const quotedChannel = (channel: string): string => `"${channel.replaceAll('"', '""')}"`;
