import type { Query } from './calls.ts';
import { literal, type PgNames } from './names.ts';

/** A Redis glob (`*`, `?`, `[...]`, `\x`) as an anchored POSIX regular expression. */
export function globToRegex(glob: string): string {
  let out = '^';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else if (ch === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) out += '\\[';
      else {
        const body = glob.slice(i + 1, end);
        out += `[${body.startsWith('^') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else if (ch === '\\' && i + 1 < glob.length) out += `\\${glob[++i]}`;
    else out += /[A-Za-z0-9_]/.test(ch) ? ch : `\\${ch}`;
  }
  return `${out}$`;
}

/**
 * SCAN cursor [MATCH pattern] [COUNT n] over the table's live rows: the cursor is the last key
 * returned (base64url), '0' at the start and once every key was seen. Keys come in key order.
 */
export async function scanKeys(
  query: Query,
  names: PgNames,
  args: readonly string[],
): Promise<[string, string[]]> {
  const cursor = args[1] ?? '0';
  let pattern = '*';
  let count = 10;
  for (let i = 2; i < args.length; i += 2) {
    const word = (args[i] ?? '').toUpperCase();
    if (word === 'MATCH') pattern = args[i + 1] ?? '*';
    else if (word === 'COUNT') count = Math.max(1, Math.min(10_000, Number(args[i + 1]) || 10));
  }
  const after = cursor === '0' ? undefined : Buffer.from(cursor, 'base64url').toString('utf8');
  const [result] = await query(
    `SELECT key FROM ${names.qualified} WHERE ` +
      `(expire_at IS NULL OR expire_at > floor(extract(epoch FROM clock_timestamp()) * 1000)) ` +
      `AND key ~ ${literal(globToRegex(pattern))}` +
      `${after === undefined ? '' : ` AND key > ${literal(after)}`} ORDER BY key LIMIT ${count}`,
  );
  const keys = (result?.rows ?? []).map((row) => (row as { key: string }).key);
  const next = keys.length < count ? '0' : Buffer.from(keys.at(-1)!, 'utf8').toString('base64url');
  return [next, keys];
}
