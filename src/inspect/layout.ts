import { keyFor } from '../engine/context.ts';

/** The primitives whose state can be inspected. */
export type Primitive = 'mutex' | 'semaphore' | 'rwlock' | 'fair' | 'election';

export const PRIMITIVES: readonly Primitive[] = ['mutex', 'semaphore', 'rwlock', 'fair', 'election'];

/**
 * Each primitive's keys, by suffix after `<prefix>:{<name>}`, in the order inspect.lua takes them
 * (src/primitives/*.ts lay them out). Keys not listed (release counters, arrival counters, turn
 * keys, the election log) tell nothing about holders or waiters.
 */
const SUFFIXES: Record<Primitive, readonly string[]> = {
  mutex: ['', 'fence'],
  semaphore: ['sem', 'sem:fence'],
  rwlock: ['rw:writer', 'rw:readers', 'rw:waiting', 'rw:fence'],
  fair: ['fair', 'fair:fence', 'fair:queue', 'fair:deadlines'],
  election: ['election', 'election:fence'],
};

/** inspect.lua's KEYS for one primitive of `name`. */
export function keysOf(prefix: string, name: string, primitive: Primitive): string[] {
  return SUFFIXES[primitive].map((suffix) => keyFor(prefix, name, suffix));
}

/** Which primitive a key's suffix belongs to (any of its keys counts: a free lock keeps its fence). */
const BY_SUFFIX = new Map<string, Primitive>(
  PRIMITIVES.flatMap((p) => SUFFIXES[p].map((suffix) => [suffix, p] as const)),
);

/**
 * The name and primitive a key belongs to, or undefined for keys that are not inspectable state.
 * Keys look like `<prefix>:{<name>}` or `<prefix>:{<name>}:<suffix>`.
 */
export function parseKey(prefix: string, key: string): { name: string; primitive: Primitive } | undefined {
  const head = `${prefix}:{`;
  if (!key.startsWith(head)) return undefined;
  const rest = key.slice(head.length);
  if (rest.endsWith('}')) return { name: rest.slice(0, -1), primitive: 'mutex' };
  // The last "}:" whose suffix is known: a name may itself contain "}:".
  for (let at = rest.lastIndexOf('}:'); at > 0; at = rest.lastIndexOf('}:', at - 1)) {
    const primitive = BY_SUFFIX.get(rest.slice(at + 2));
    if (primitive !== undefined) return { name: rest.slice(0, at), primitive };
  }
  return undefined;
}

/** A SCAN MATCH pattern for every key of every name starting with `namePrefix`. */
export function matchPattern(prefix: string, namePrefix: string): string {
  return `${globEscape(`${prefix}:{${namePrefix}`)}*`;
}

function globEscape(text: string): string {
  return text.replace(/[\\*?[\]]/g, '\\$&');
}
