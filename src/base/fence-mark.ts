import { keySlot, SLOTS, tagSlot } from './slot.ts';

// A fence mark: the high-water mark of the fencing counters of every name in one hash slot
// (scripts/includes/next-fence.lua, docs/safety.md "Counters that expire"). One key per prefix
// and slot that a name of the prefix ever used, never one per name, and on every topology the
// same: in the slot of the names it serves, so that a script reaches it on Redis Cluster (and on
// PostgreSQL, names of two slots never wait for each other's mark). It has no TTL: what it
// remembers must outlive every counter, whatever the server's clock does.

const MARK = ':fence-mark';

/** Per slot, the smallest number whose decimal text, as a hash tag, lands in it (found so far). */
const tags = new Array<string | undefined>(SLOTS);
/** The numbers below this were tried. */
let tried = 0;

/**
 * The hash tag for `slot`. Numbers are tried in order, and every slot they land in remembered:
 * a first lookup tries about 16,000 (a few ms), all slots together about 170,000, once.
 */
function tagFor(slot: number): string {
  let tag = tags[slot];
  while (tag === undefined) {
    const text = String(tried++);
    tags[tagSlot(text)] ??= text;
    tag = tags[slot];
  }
  return tag;
}

/** Prefixes whose marks are kept (a process has a few; tests make hundreds: then start over). */
const KEPT_PREFIXES = 8;
/** Per prefix, the mark of each slot named so far: every acquisition and release names one. */
const marks = new Map<string, Map<number, string>>();

/** The fence mark of the counter `key` (a key of `prefix`): `<prefix>:fence-mark{<tag>}`. */
export function fenceMark(prefix: string, key: string): string {
  let bySlot = marks.get(prefix);
  if (bySlot === undefined) {
    if (marks.size >= KEPT_PREFIXES) marks.clear();
    bySlot = new Map();
    marks.set(prefix, bySlot);
  }
  const slot = keySlot(key);
  let mark = bySlot.get(slot);
  if (mark === undefined) {
    mark = `${prefix}${MARK}{${tagFor(slot)}}`;
    bySlot.set(slot, mark);
  }
  return mark;
}

/** Whether `key` is a fence mark (of any prefix). */
export const isFenceMark = (key: string): boolean => /:fence-mark\{\d+\}$/.test(key);

/** The fence mark, under the prefix of the fence mark `mark`, of the slot `key` lives in. */
export const fenceMarkLike = (mark: string, key: string): string =>
  fenceMark(mark.slice(0, mark.lastIndexOf(MARK)), key);
