/**
 * Owner metadata: who holds a lease, and since when. It travels inside the value the scripts
 * already store (the lock key's value, a semaphore or reader member, the election's token field):
 * `<token>~<since, epoch ms in base 36>~<owner>`. Every script compares that whole string
 * exactly as it compared the bare token before, so compare-and-act semantics are unchanged, and
 * no extra key, command or round trip exists (docs/inspection.md, "Why in the value").
 */

import { hostname } from 'node:os';
import { basename } from 'node:path';
import { newToken } from './token.ts';

/** Longest owner accepted, in characters: it is stored with every lease and waiter. */
export const MAX_OWNER_LENGTH = 200;

/**
 * Control characters, which an owner may not hold: they would garble the CLI's and dashboard's
 * one-line views. Global, for replace(); search() ignores lastIndex, test() would not.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;

/** Length of the random token that starts every stored value (16 bytes in base64url). */
export const TOKEN_LENGTH = 22;

const SEPARATOR = '~';

/**
 * `host:pid:<what>`, as a valid owner. `what` defaults to the process title, or its base name when
 * it is a path (Node's own title is its executable's full path).
 */
export function defaultOwner(what: string = basename(process.title)): string {
  return asOwner(`${hostname()}:${process.pid}:${what}`);
}

/** Any text made a valid owner: control characters become spaces, cut to the longest allowed. */
export function asOwner(text: string): string {
  return text.replace(CONTROL_CHARACTERS, ' ').slice(0, MAX_OWNER_LENGTH) || '?';
}

/** A fresh stored value: a new random token, the time (`at`, epoch ms: now), and the owner. */
export function stamp(owner: string, at = Date.now()): string {
  return `${newToken()}${SEPARATOR}${at.toString(36)}${SEPARATOR}${owner}`;
}

/** The random token of a stored value (what `lease.token` shows). */
export function tokenOf(value: string): string {
  return value.length > TOKEN_LENGTH ? value.slice(0, TOKEN_LENGTH) : value;
}

/** What a stored value tells: its token, and owner and since when it carries them. */
export interface Stamp {
  token: string;
  owner: string | undefined;
  /** Epoch ms (the holder's clock) of the attempt that wrote the value. */
  since: number | undefined;
}

/** Reads a stored value; a bare token (written by an older leasehold) has no owner. */
export function parseStamp(value: string): Stamp {
  if (value.charAt(TOKEN_LENGTH) !== SEPARATOR) return { token: value, owner: undefined, since: undefined };
  const end = value.indexOf(SEPARATOR, TOKEN_LENGTH + 1);
  if (end === -1) return { token: value, owner: undefined, since: undefined };
  const since = Number.parseInt(value.slice(TOKEN_LENGTH + 1, end), 36);
  return {
    token: value.slice(0, TOKEN_LENGTH),
    owner: value.slice(end + 1),
    since: Number.isFinite(since) ? since : undefined,
  };
}
