/**
 * Grant notes: when a holder that waited got its lease (src/scripts/note-granted.lua). The
 * stored value carries when the holder began to ask (owner.ts), fixed for the whole wait since a
 * direct grant names it; a holder that waited notes the moment it got the lease beside the key
 * it holds, and inspection reads both (docs/inspection.md, "Asked and granted").
 */

import { TOKEN_LENGTH } from './owner.ts';
import { toText } from './replies.ts';

/** What a note's key adds to the key the lease holds (its hash tag, so its slot, is the same). */
export const NOTES_TAIL = ':granted';

/** The notes beside `key`, a key some lease holds. */
export const notesKey = (key: string): string => `${key}${NOTES_TAIL}`;

/** A note's member: the holder's token, and when it got the lease (epoch ms, its clock). */
export const noteMember = (token: string, at: number): string => `${token}~${at.toString(36)}`;

/** Notes as read by inspect-granted.lua: when each token's holder got its lease. */
export function readNotes(reply: unknown): Map<string, number> {
  const notes = new Map<string, number>();
  for (const raw of Array.isArray(reply) ? reply : []) {
    const member = toText(raw);
    const at = Number.parseInt(member.slice(TOKEN_LENGTH + 1), 36);
    if (member.charAt(TOKEN_LENGTH) === '~' && Number.isFinite(at))
      notes.set(member.slice(0, TOKEN_LENGTH), at);
  }
  return notes;
}
