import type { Entry } from '../memory/backend.ts';
import { Stream, type StreamSnapshot } from '../memory/stream.ts';
import { formatScore, parseScore, SortedSet } from '../memory/zset.ts';

/**
 * One key as a row: its Redis type, its value as text (a string as itself, the other types as
 * JSON), and when it expires (epoch ms on the PostgreSQL server's clock, null without a TTL).
 */
export interface Row {
  key: string;
  type: 'string' | 'hash' | 'zset' | 'stream';
  value: string;
  expireAt: number | null;
}

/** The entry a scratch store holds for a row (expiry on the server's epoch-ms clock). */
export function toEntry(row: Row): Entry {
  return { value: decode(row.type, row.value), expiresAt: row.expireAt ?? undefined };
}

function decode(type: Row['type'], text: string): Entry['value'] {
  switch (type) {
    case 'string':
      return text;
    case 'hash':
      return new Map(JSON.parse(text) as [string, string][]);
    case 'zset': {
      const set = new SortedSet();
      for (const [member, score] of JSON.parse(text) as [string, string][])
        set.set(member, parseScore(score));
      return set;
    }
    case 'stream':
      return Stream.restore(JSON.parse(text) as StreamSnapshot);
  }
}

/** The row for an entry of key `key`. */
export function toRow(key: string, entry: Entry): Row {
  const expireAt = entry.expiresAt === undefined ? null : Math.ceil(entry.expiresAt);
  const value = entry.value;
  if (typeof value === 'string') return { key, type: 'string', value, expireAt };
  if (value instanceof Map) return { key, type: 'hash', value: JSON.stringify([...value]), expireAt };
  if (value instanceof SortedSet) {
    const items = value.range(0, -1).map((item) => [item.member, formatScore(item.score)]);
    return { key, type: 'zset', value: JSON.stringify(items), expireAt };
  }
  return { key, type: 'stream', value: JSON.stringify(value.snapshot()), expireAt };
}
