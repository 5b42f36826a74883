import { parseStamp } from '../base/owner.ts';
import { optionalText } from '../base/replies.ts';
import type { Driver, ScriptCall } from '../driver/types.ts';
import { electionLayout, resignCall } from '../primitives/election.ts';
import { fairLayout, fairSpec } from '../primitives/fair.ts';
import { mutexKeys, releaseCall } from '../primitives/mutex.ts';
import { readSpec, rwLayout, writeSpec } from '../primitives/rwlock.ts';
import { semaphoreLayout, semaphoreSpec } from '../primitives/semaphore.ts';
import type { Primitive } from './key-names.ts';

/** One holder as Redis stores it: the value its lease compares with, and the release that frees it. */
interface Stored {
  value: string;
  role?: 'reader' | 'writer';
  permits?: number;
  release: ScriptCall;
}

/** One holder a forced release freed (or found gone meanwhile). */
export interface Freed {
  token: string;
  owner: string | undefined;
  role?: 'reader' | 'writer';
  permits?: number;
  /** false: it had left (released, expired, freed by someone else) between the read and the release. */
  released: boolean;
  /** Quorum mode: the nodes its copy was freed on (`leasehold release --force --nodes`). */
  nodes?: string[];
}

type Read = (args: string[]) => Promise<unknown>;

const text = (reply: unknown): string | undefined => optionalText(reply);
const list = (reply: unknown): string[] =>
  (Array.isArray(reply) ? reply : []).map((v) => optionalText(v) ?? '').filter((v) => v !== '');

/**
 * Every primitive's holders, read as Redis stores them, each with the primitive's own release:
 * a forced release runs exactly what the holder's release() would (compare-and-delete, then the
 * direct grant or wake-up of the next in line, the fencing counter untouched), on the value
 * read. A holder that leaves between the read and the release is not touched by it.
 */
const HOLDERS: Record<Primitive, (read: Read, prefix: string, name: string) => Promise<Stored[]>> = {
  async mutex(read, prefix, name) {
    const k = mutexKeys(prefix, name);
    const value = text(await read(['GET', k.lock]));
    return value === undefined ? [] : [{ value, release: releaseCall(k, value) }];
  },
  async semaphore(read, prefix, name) {
    const k = semaphoreLayout.keys(prefix, name);
    // Members are `<value>:<i>`, one per permit: a holder's release gives back all of its permits.
    const permits = new Map<string, number>();
    for (const member of list(await read(['ZRANGE', k.set, '0', '-1']))) {
      const value = member.slice(0, member.lastIndexOf(':'));
      permits.set(value, (permits.get(value) ?? 0) + 1);
    }
    return [...permits].map(([value, n]) => ({
      value,
      permits: n,
      // The release reads no limit (each caller passes its own; Redis does not store it).
      release: semaphoreSpec.release(k, value, { permits: n, limit: n }) as ScriptCall,
    }));
  },
  async rwlock(read, prefix, name) {
    const k = rwLayout.keys(prefix, name);
    const [writer, readers] = await Promise.all([
      read(['GET', k.writer]).then(text),
      read(['ZRANGE', k.readers, '0', '-1']).then(list),
    ]);
    return [
      ...(writer === undefined
        ? []
        : [
            {
              value: writer,
              role: 'writer' as const,
              release: writeSpec.release(k, writer, undefined) as ScriptCall,
            },
          ]),
      ...readers.map((value) => ({
        value,
        role: 'reader' as const,
        release: readSpec.release(k, value, undefined) as ScriptCall,
      })),
    ];
  },
  async fair(read, prefix, name) {
    const k = fairLayout.keys(prefix, name);
    const value = text(await read(['GET', k.lock]));
    return value === undefined
      ? []
      : [{ value, release: fairSpec.release(k, value, undefined) as ScriptCall }];
  },
  async election(read, prefix, name) {
    const k = electionLayout.keys(prefix, name);
    const value = text(await read(['HGET', k.leader, 'token']));
    return value === undefined ? [] : [{ value, release: resignCall(k, value) }];
  },
};

/**
 * Frees `name`'s holders of `primitive` whoever they are (`leasehold release --force`): all of
 * them, or only the one whose `lease.token` is `token`. Each is released through the primitive's
 * own release script, so the next in line is granted or woken as by a release.
 */
export async function forceRelease(
  driver: Driver,
  prefix: string,
  name: string,
  primitive: Primitive,
  token?: string,
): Promise<Freed[]> {
  const holders = await HOLDERS[primitive]((args) => driver.command(args), prefix, name);
  const chosen = holders
    .map((holder) => ({ holder, ...parseStamp(holder.value) }))
    .filter((h) => token === undefined || h.token === token);
  // Sent together, so that they share round trips: one after the other, a semaphore's hundred
  // holders cost a hundred of them. Each release stands alone (its own compare), so their order
  // does not matter; the list keeps the order read.
  return Promise.all(
    chosen.map(
      async ({ holder, token: own, owner }): Promise<Freed> => ({
        token: own,
        owner,
        ...(holder.role === undefined ? {} : { role: holder.role }),
        ...(holder.permits === undefined ? {} : { permits: holder.permits }),
        released: released(await driver.eval(holder.release)),
      }),
    ),
  );
}

/** A release script's reply: 1, or `{1, ...}` (fair-release), when it freed what it was given. */
function released(reply: unknown): boolean {
  const first = Array.isArray(reply) ? reply[0] : reply;
  return Number(first) === 1;
}
