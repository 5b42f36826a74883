import assert from 'node:assert/strict';
import type { Leasehold } from '../../src/index.ts';
import { until } from './poll.ts';

/**
 * Runs every primitive through acquire, contention (a waiter recorded where the primitive records
 * one), automatic extension, hand-over on release, and inspection, with two instances on the
 * same Redis and prefix: what an ACL user must be allowed for leasehold to work
 * (docs/security.md). Each hand-over must come from the release, well before the holder's TTL.
 */
export async function exercise(a: Leasehold, b: Leasehold): Promise<void> {
  const ttl = 300;
  const soon = { timeout: 5_000 };

  // Mutex: b waits while a holds and extends; a's release hands it over.
  const held = await a.acquire('m', { ttl });
  const waiting = b.acquire('m', { ttl, ...soon });
  await new Promise((r) => setTimeout(r, ttl)); // one extension at least (every ttl / 3)
  assert.equal(held.lost, false, 'the holder extended its lease');
  await held.release();
  await (await waiting).release();
  assert.equal(await b.tryAcquire('m').then((l) => l?.release()), true);
  const forced = await b.forceAcquire('m', { ttl });
  await a.withLock('w', async () => {}, soon);
  await forced.release();

  // multiLock: two mutex names at once.
  const both = await a.multiLock(['x', 'y']).acquire(soon);
  await both.release();

  // Semaphore: every permit taken, b waits for one.
  const sem = a.semaphore('s', { limit: 2 });
  const permits = await sem.acquire({ permits: 2, ttl });
  const permit = b.semaphore('s', { limit: 2 }).acquire({ ttl, ...soon });
  assert.equal(await sem.count(), 2);
  await permits.release();
  await (await permit).release();

  // Read-write lock: a writer waits (recorded in Redis) behind a reader.
  const reader = await a.readWriteLock('rw').read({ ttl });
  const writer = b.readWriteLock('rw').write({ ttl, ...soon });
  await until('the waiting writer to be recorded', waiters(a, 'rw', 'rwlock'), { timeout: 5_000 });
  await reader.release();
  await (await writer).release();

  // Fair lock: b queues behind a.
  const first = await a.fairLock('f').acquire({ ttl });
  const second = b.fairLock('f').acquire({ ttl, ...soon });
  await until('the fair-lock waiter to be queued', waiters(a, 'f', 'fair'), { timeout: 5_000 });
  await first.release();
  await (await second).release();

  // Election: campaign, proclaim, observe from the other instance, resign.
  const observer = new AbortController();
  const changes = b.election('e').observe({ signal: observer.signal });
  const term = await a.election('e').campaign('node-a', { ttl });
  const seen = await changes.next();
  assert.equal(seen.done, false);
  await term.proclaim('node-a2');
  assert.equal((await b.election('e').leader())?.value, 'node-a2');
  await term.resign();
  observer.abort();
  await changes.return(undefined);

  // Inspection: one name, and SCAN for the list (live names only: hold a few while listing).
  assert.equal((await a.inspect('m'))?.primitive, 'mutex');
  const live = await Promise.all([
    a.acquire('l1'),
    a.acquire('l2'),
    a.semaphore('l3', { limit: 1 }).acquire(),
  ]);
  assert.deepEqual((await a.list({ limit: 100 })).map((lock) => lock.name).sort(), ['l1', 'l2', 'l3']);
  await Promise.all(live.map((lease) => lease.release()));
}

/** Whether Redis records a waiter for `name` (a check for `until`). */
export function waiters(lh: Leasehold, name: string, primitive: 'rwlock' | 'fair'): () => Promise<boolean> {
  return async () => ((await lh.inspect(name, { primitive }))?.waiters?.length ?? 0) > 0;
}
