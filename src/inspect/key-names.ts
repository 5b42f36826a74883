import { notesKey } from '../base/grant-note-format.ts';
import { PRIMITIVES, type Primitive } from '../options/inspect.ts';
import { REGISTRY } from '../primitives/registry.ts';

export { PRIMITIVES, type Primitive };

/** The inspect script's KEYS for one primitive of `name`, from the primitive's own layout. */
export function inspectionKeys(prefix: string, name: string, primitive: Primitive): string[] {
  const { layout, inspection } = REGISTRY[primitive];
  const keys = layout.keys(prefix, name);
  return inspection.keys.map((role) => keys[role]!);
}

/**
 * Which primitive a key's suffix belongs to: the suffixes of each primitive's state keys (any of
 * them counts: a free lock keeps its fence). Release and arrival counters, turn keys and the
 * election log tell nothing about holders or waiters.
 */
const BY_SUFFIX = new Map<string, Primitive>(
  PRIMITIVES.flatMap((p) => {
    const { layout, inspection } = REGISTRY[p];
    // Grant notes too (src/base/grant-note-format.ts): `top` and the dashboard read a name again when
    // a holder that waited notes when it got it; list() reads it and leaves it out unless live.
    const notes = inspection.held.map((role) => [notesKey(layout.tail(role)).slice(1), p] as const);
    return [...inspection.state.map((role) => [layout.suffixes[role]!, p] as const), ...notes];
  }),
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
