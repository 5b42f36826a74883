import { fenceMark } from '../base/fence-mark.ts';
import { keyFor } from '../base/keys.ts';

/**
 * A primitive's keys, written once: each role's suffix after `<prefix>:{<name>}` ('' for the bare
 * key). The spec builds its keys from it; inspection, the command line and the tests read it. All
 * keys of a name share the hash tag `{name}`, so each script runs on one Cluster slot.
 */
export interface Layout<R extends string> {
  readonly suffixes: Readonly<Record<R, string>>;
  /**
   * The keys of `name`, and `mark`: the fence mark of their slot (scripts/includes/fence-mark.lua),
   * a key of the prefix rather than of the name. Not enumerable, and computed when asked: most
   * calls (extensions) draw no token.
   */
  keys(prefix: string, name: string): Record<R, string> & { readonly mark: string };
  /** What role `role`'s key adds after the bare key `<prefix>:{<name>}` ('' or `:<suffix>`). */
  tail(role: R): string;
}

/** The layout of a primitive whose roles have these suffixes. */
export function layout<R extends string>(suffixes: Record<R, string>): Layout<R> {
  const tail = (role: R): string => keyFor('', '', suffixes[role]).slice(':{}'.length);
  // Every acquisition builds its keys: the bare key once, each suffix appended to it.
  const tails = (Object.keys(suffixes) as R[]).map((role) => [role, tail(role)] as const);
  return {
    suffixes,
    tail,
    keys: (prefix, name) => {
      const bare = keyFor(prefix, name);
      const keys = {} as Record<R, string>;
      for (const [role, tail] of tails) keys[role] = bare + tail;
      return Object.defineProperty(keys as Record<R, string> & { readonly mark: string }, 'mark', {
        get: () => fenceMark(prefix, bare),
      });
    },
  };
}
