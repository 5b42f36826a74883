// What the strand tests share (test/integration/grant-strands.test.ts, postgres-strands): one
// way to wait for each primitive that hands a released name to a waiter by a direct grant, and
// a check that a waiter of a given owner is registered in Redis (inspect() lists it).
import type { Lease, Leasehold } from '../../src/index.ts';
import { until } from './poll.ts';

export type Kind = 'mutex' | 'fair' | 'semaphore' | 'writer';
export const KINDS: readonly Kind[] = ['mutex', 'fair', 'semaphore', 'writer'];

/** Waits up to `timeout` ms for `name` as `kind` (a semaphore of one permit, a write lease). */
export function take(lh: Leasehold, kind: Kind, name: string, timeout: number): Promise<Lease> {
  if (kind === 'mutex') return lh.acquire(name, { timeout });
  if (kind === 'fair') return lh.fairLock(name).acquire({ timeout });
  if (kind === 'semaphore') return lh.semaphore(name, { limit: 1 }).acquire({ timeout });
  return lh.readWriteLock(name).write({ timeout });
}

/** The hash of a kind's waiters registered for a grant (their records), under `prefix`. */
export function grantRecords(prefix: string, kind: Kind, name: string): string {
  const tail = { mutex: 'grants', fair: 'fair:grants', semaphore: 'sem:grants', writer: 'rw:grants' }[kind];
  return `${prefix}:{${name}}:${tail}`;
}

/** Until `lh.inspect(name)` lists a waiter stamped `owner` (registered for a grant, or queued). */
export async function listed(lh: Leasehold, name: string, owner: string, timeout = 5_000): Promise<void> {
  await until(
    `${owner} listed as a waiter of ${name}`,
    async () => ((await lh.inspect(name))?.waiters ?? []).some((w) => w.owner === owner),
    { timeout, interval: 10 },
  );
}
