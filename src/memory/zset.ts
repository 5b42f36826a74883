/** One end of a score range: `(5` excludes 5, `-inf` / `+inf` are open. */
export interface ScoreBound {
  value: number;
  exclusive: boolean;
}

/** A ZRANGEBYSCORE-style bound: `-inf`, `+inf`, `5`, `(5`. Throws Redis's error for anything else. */
export function parseScoreBound(text: string): ScoreBound {
  const exclusive = text.startsWith('(');
  const value = parseScore(exclusive ? text.slice(1) : text, 'ERR min or max is not a float');
  return { value, exclusive };
}

/** A score as Redis reads it: a float, `inf`, `+inf` or `-inf` (case-insensitive). */
export function parseScore(text: string, error = 'ERR value is not a valid float'): number {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  const value = text.trim() === text && text !== '' ? Number(text) : Number.NaN;
  if (Number.isNaN(value)) throw new Error(error);
  return value;
}

/** A score as Redis replies with it (RESP2: a string that reads back to the same double). */
export function formatScore(score: number): string {
  if (score === Number.POSITIVE_INFINITY) return 'inf';
  if (score === Number.NEGATIVE_INFINITY) return '-inf';
  return String(score);
}

interface Item {
  member: string;
  score: number;
}

const before = (a: Item, score: number, member: string): boolean =>
  a.score < score || (a.score === score && a.member < member);

/**
 * A Redis sorted set: members ordered by score, ties by member. An array kept in order (binary
 * search, splice) plus a score map: the sets leasehold keeps are small (permits, readers, waiters).
 */
export class SortedSet {
  readonly #scores = new Map<string, number>();
  readonly #items: Item[] = [];

  get size(): number {
    return this.#items.length;
  }

  score(member: string): number | undefined {
    return this.#scores.get(member);
  }

  /** Adds or re-scores `member`: what changed, as ZADD counts it. */
  set(member: string, score: number): 'added' | 'updated' | 'unchanged' {
    const old = this.#scores.get(member);
    if (old === score) return 'unchanged';
    if (old !== undefined) this.#items.splice(this.#lowerBound(old, member), 1);
    this.#items.splice(this.#lowerBound(score, member), 0, { member, score });
    this.#scores.set(member, score);
    return old === undefined ? 'added' : 'updated';
  }

  delete(member: string): boolean {
    const old = this.#scores.get(member);
    if (old === undefined) return false;
    this.#items.splice(this.#lowerBound(old, member), 1);
    this.#scores.delete(member);
    return true;
  }

  /** ZRANGE start stop by rank, negative ranks counting from the end. */
  range(start: number, stop: number): Item[] {
    const n = this.#items.length;
    const from = Math.max(0, start < 0 ? n + start : start);
    const to = Math.min(n - 1, stop < 0 ? n + stop : stop);
    return from > to ? [] : this.#items.slice(from, to + 1);
  }

  /** Members whose score lies between `min` and `max`, in order. */
  byScore(min: ScoreBound, max: ScoreBound): Item[] {
    const out: Item[] = [];
    for (let i = this.#firstAtLeast(min); i < this.#items.length; i++) {
      const item = this.#items[i]!;
      if (item.score > max.value || (max.exclusive && item.score === max.value)) break;
      out.push(item);
    }
    return out;
  }

  /** Removes the members `byScore` would return; returns how many. */
  removeByScore(min: ScoreBound, max: ScoreBound): number {
    const gone = this.byScore(min, max);
    if (gone.length === 0) return 0;
    this.#items.splice(this.#firstAtLeast(min), gone.length);
    for (const { member } of gone) this.#scores.delete(member);
    return gone.length;
  }

  #firstAtLeast(min: ScoreBound): number {
    let lo = 0;
    let hi = this.#items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = this.#items[mid]!.score;
      if (s < min.value || (min.exclusive && s === min.value)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #lowerBound(score: number, member: string): number {
    let lo = 0;
    let hi = this.#items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(this.#items[mid]!, score, member)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
