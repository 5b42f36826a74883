import type { Primitive } from '../options/inspect.ts';
import { electionInspection, electionLayout } from './election.ts';
import { fairInspection, fairLayout } from './fair.ts';
import type { Inspection, InspectionSpec } from './inspection.ts';
import type { Layout } from './layout.ts';
import { mutexInspection, mutexLayout } from './mutex.ts';
import { rwInspection, rwLayout } from './rwlock.ts';
import { semaphoreInspection, semaphoreLayout } from './semaphore.ts';

/** What inspection, the command line and the tests know of one primitive: its keys and how to read them. */
export interface PrimitiveEntry {
  readonly layout: Layout<string>;
  readonly inspection: InspectionSpec<string>;
  /** How `leasehold status` words it. */
  readonly describe: {
    readonly title: string;
    /** What its last fencing token is. */
    readonly fencing: string;
    /** Where its waiters are when Redis does not record them (Inspection.waiters undefined). */
    readonly localWaiters?: string;
    /** Why an empty list of waiters may still leave someone waiting. */
    readonly unlisted?: string;
    /** How its waiters are served, after their count; by default 'in line, first served first'. */
    readonly served?: string;
    /** Its state in a few words; by default 'held' with a holder, else 'free'. */
    readonly state?: (inspection: Inspection) => string;
    /** Lines of its own after the holders (a semaphore's permits beyond those listed, its limit). */
    readonly extra?: (inspection: Inspection) => string[];
  };
}

/** `count` `noun`s, with the plural `s` when count is not 1. */
const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** How `leasehold status` words a primitive's state: its entry's own words, else held or free. */
export function stateOf(inspection: Inspection): string {
  const own = REGISTRY[inspection.primitive].describe.state;
  if (own !== undefined) return own(inspection);
  return inspection.holders.length > 0 ? 'held' : 'free';
}

/**
 * Every primitive with state in Redis, in the order `lh.inspect(name)` tries them. Adding a
 * primitive adds its entry here (docs/architecture.md, "Adding a primitive"); the multiLock
 * holds mutex keys and has no entry of its own.
 */
/** Where waiters do not register (no direct grants): each waits in its own process. */
const NOT_REGISTERED =
  'not recorded in Redis here (on the memory backend and a GLIDE client of your own no waiter registers for a direct grant)';

/** Waiters registered for a direct grant (docs/direct-grants.md): a first attempt registers nothing. */
const REGISTERED = 'a waiter is listed once it registers for a direct grant, from its second attempt';

export const REGISTRY: Readonly<Record<Primitive, PrimitiveEntry>> = {
  mutex: {
    layout: mutexLayout,
    inspection: mutexInspection,
    describe: {
      title: 'mutex',
      fencing: 'last token issued',
      unlisted: `${REGISTERED}, or where there are no grants (quorum mode, the memory backend, a GLIDE client of your own) from its first attempt that finds the lock held; a multiLock waiter from its first attempt that finds one of its names held, where one script takes all its names (one Redis, one Cluster slot)`,
    },
  },
  semaphore: {
    layout: semaphoreLayout,
    inspection: semaphoreInspection,
    describe: {
      title: 'semaphore',
      fencing: 'last token issued; Redis does not record which permit got which',
      localWaiters: NOT_REGISTERED,
      unlisted: REGISTERED,
      state: ({ permitsInUse = 0, holders }) =>
        permitsInUse === 0
          ? 'free: no permit in use'
          : `held: ${count(permitsInUse, 'permit')} in use by ${count(holders.length, 'holder')}`,
      extra: ({ permitsInUse = 0, holders }) => {
        const listed = holders.reduce((sum, h) => sum + (h.permits ?? 1), 0);
        return [
          ...(permitsInUse > listed
            ? [`           … ${permitsInUse} permits in use, ${listed} listed above`]
            : []),
          '  limit    not stored in Redis: each caller passes its own (semaphore(name, { limit }))',
        ];
      },
    },
  },
  rwlock: {
    layout: rwLayout,
    inspection: rwInspection,
    describe: {
      title: 'read-write lock',
      fencing: "last token issued; a writer's is listed with it, Redis does not record readers'",
      unlisted: `a waiting writer is listed at once; a reader once it registers for a direct grant, from its second attempt`,
      state: ({ holders }) => {
        if (holders.some((h) => h.role === 'writer')) return 'write-locked (one writer)';
        const readers = holders.filter((h) => h.role === 'reader').length;
        return readers > 0 ? `read-locked by ${count(readers, 'reader')}` : 'free';
      },
    },
  },
  fair: {
    layout: fairLayout,
    inspection: fairInspection,
    describe: { title: 'fair lock', fencing: 'last token issued' },
  },
  election: {
    layout: electionLayout,
    inspection: electionInspection,
    describe: {
      title: 'election',
      fencing: "last term's token issued",
      unlisted: 'a candidate is listed from its first attempt that finds a leader',
      served: 'waiting, in the order they began; no line: the first to ask once the term ends wins',
      state: ({ holders }) => (holders.length > 0 ? 'a leader holds the term' : 'no leader'),
    },
  },
};
