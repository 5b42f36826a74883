import type { Primitive } from '../options/inspect.ts';
import { electionInspection, electionLayout } from './election.ts';
import { fairInspection, fairLayout } from './fair.ts';
import type { InspectionSpec } from './inspection.ts';
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
  };
}

/**
 * Every primitive with state in Redis, in the order `lh.inspect(name)` tries them. Adding a
 * primitive adds its entry here (docs/architecture.md, "Adding a primitive"); the multiLock
 * holds mutex keys and has no entry of its own.
 */
export const REGISTRY: Readonly<Record<Primitive, PrimitiveEntry>> = {
  mutex: {
    layout: mutexLayout,
    inspection: mutexInspection,
    describe: {
      title: 'mutex',
      fencing: 'last token issued',
      localWaiters: "not recorded in Redis for a mutex (they wait for its key's invalidation push)",
    },
  },
  semaphore: {
    layout: semaphoreLayout,
    inspection: semaphoreInspection,
    describe: {
      title: 'semaphore',
      fencing: 'last token issued; Redis does not record which permit got which',
      localWaiters: 'not recorded in Redis for a semaphore (each waits in its own process)',
    },
  },
  rwlock: {
    layout: rwLayout,
    inspection: rwInspection,
    describe: {
      title: 'read-write lock',
      fencing: "last token issued; a writer's is listed with it, Redis does not record readers'",
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
      localWaiters: 'candidates are not recorded in Redis (each campaigns from its own process)',
    },
  },
};
