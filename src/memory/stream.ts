/** A stream entry ID: milliseconds and sequence number. */
export type StreamId = readonly [ms: number, seq: number];

const MAX = Number.MAX_SAFE_INTEGER;
const BAD_ID = 'ERR Invalid stream ID specified as stream command argument';

export const formatId = ([ms, seq]: StreamId): string => `${ms}-${seq}`;

const compare = (a: StreamId, b: StreamId): number => a[0] - b[0] || a[1] - b[1];

function parseNumber(text: string): number {
  if (!/^\d+$/.test(text)) throw new Error(BAD_ID);
  const n = Number(text);
  if (n > MAX) throw new Error(BAD_ID);
  return n;
}

/**
 * An XRANGE bound: `-`, `+`, `<ms>`, `<ms>-<seq>`, or `(` before an ID to exclude it. A bare `<ms>`
 * means its first entry as a start and its last as an end, as in Redis.
 */
export function parseRangeId(text: string, side: 'start' | 'end'): StreamId {
  if (text === '-') return [0, 0];
  if (text === '+') return [MAX, MAX];
  const exclusive = text.startsWith('(');
  const body = exclusive ? text.slice(1) : text;
  const dash = body.indexOf('-');
  const id: StreamId =
    dash < 0
      ? [parseNumber(body), side === 'start' ? 0 : MAX]
      : [parseNumber(body.slice(0, dash)), parseNumber(body.slice(dash + 1))];
  if (!exclusive) return id;
  if (side === 'start') {
    if (id[0] === MAX && id[1] === MAX) throw new Error('ERR invalid start ID for the interval');
    return id[1] === MAX ? [id[0] + 1, 0] : [id[0], id[1] + 1];
  }
  if (id[0] === 0 && id[1] === 0) throw new Error('ERR invalid end ID for the interval');
  return id[1] === 0 ? [id[0] - 1, MAX] : [id[0], id[1] - 1];
}

interface Entry {
  id: StreamId;
  /** field, value, field, value... as XRANGE replies with them. */
  fields: string[];
}

/** A stream as plain data. */
export interface StreamSnapshot {
  readonly last: StreamId;
  readonly entries: readonly (readonly [StreamId, readonly string[]])[];
}

/** A Redis stream: an append-only log of entries with increasing IDs. */
export class Stream {
  readonly #entries: Entry[] = [];
  /** The last ID ever added (it survives trimming, as in Redis). */
  #last: StreamId = [0, 0];

  get size(): number {
    return this.#entries.length;
  }

  /** @internal The entries and the last ID as plain data (src/postgres/ keeps them as JSON). */
  snapshot(): StreamSnapshot {
    return { last: this.#last, entries: this.#entries.map((e) => [e.id, e.fields]) };
  }

  /** @internal A stream from `snapshot()`. */
  static restore(data: StreamSnapshot): Stream {
    const stream = new Stream();
    for (const [id, fields] of data.entries) stream.append(id, [...fields]);
    stream.#last = data.last;
    return stream;
  }

  /**
   * The ID XADD would give an entry, or Redis's error: `id` '*' takes the server time in ms, and
   * the next sequence number when that ms (or a later one, after a clock step back) was used.
   */
  nextId(id: string, nowMs: number): StreamId {
    if (id === '*') {
      const ms = Math.max(nowMs, this.#last[0]);
      return ms === this.#last[0] ? [ms, this.#last[1] + 1] : [ms, 0];
    }
    const next = parseRangeId(id, 'start');
    if (compare(next, this.#last) > 0) return next;
    throw new Error(
      next[0] === 0 && next[1] === 0
        ? 'ERR The ID specified in XADD must be greater than 0-0'
        : 'ERR The ID specified in XADD is equal or smaller than the target stream top item',
    );
  }

  /** Appends an entry with an ID from `nextId()`; returns the ID as text. */
  append(id: StreamId, fields: string[]): string {
    this.#entries.push({ id, fields });
    this.#last = id;
    return formatId(id);
  }

  /** Drops the oldest entries beyond `length` (exactly; Redis's `~` may keep a few more). */
  trim(length: number): number {
    const extra = Math.max(0, this.#entries.length - length);
    this.#entries.splice(0, extra);
    return extra;
  }

  /** Entries from `start` to `end` inclusive (reversed: from `end` down to `start`), at most `count`. */
  range(start: StreamId, end: StreamId, count: number, reverse: boolean): [string, string[]][] {
    const out: [string, string[]][] = [];
    const n = this.#entries.length;
    for (let i = 0; i < n && out.length < count; i++) {
      const entry = this.#entries[reverse ? n - 1 - i : i]!;
      if (compare(entry.id, start) < 0 || compare(entry.id, end) > 0) continue;
      out.push([formatId(entry.id), [...entry.fields]]);
    }
    return out;
  }
}
