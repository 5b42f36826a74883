// The names a simulation run locks (test/sim/), one primitive each, and how the checker reads
// each one's state off the server without touching it (no expiry, no push: Store.entry).
import type { Lease, Leasehold } from '../../src/index.ts';
import { SortedSet } from '../../src/memory/zset.ts';
import { fairLayout } from '../../src/primitives/fair.ts';
import { mutexLayout } from '../../src/primitives/mutex.ts';
import { rwLayout } from '../../src/primitives/rwlock.ts';
import { semaphoreLayout } from '../../src/primitives/semaphore.ts';
import type { SimServer } from './network.ts';
import type { Random } from './random.ts';

export const PREFIX = 'sim';
export const SEMAPHORE_LIMIT = 2;

export type Kind = 'mutex' | 'fair' | 'semaphore' | 'rwlock';

export interface Target {
  readonly name: string;
  readonly kind: Kind;
}

/** One acquisition: which lease kind it asks for (a read or write lease of a rwlock) and how many permits. */
export interface Ask {
  readonly target: Target;
  readonly role: 'exclusive' | 'read' | 'write' | 'permits';
  readonly permits: number;
}

/** The targets of a run: two mutexes always, and each other primitive on most seeds. */
export function targets(random: Random): Target[] {
  const out: Target[] = [
    { name: 'a', kind: 'mutex' },
    { name: 'b', kind: 'mutex' },
  ];
  if (random.chance(0.6)) out.push({ name: 'f', kind: 'fair' });
  if (random.chance(0.6)) out.push({ name: 's', kind: 'semaphore' });
  if (random.chance(0.6)) out.push({ name: 'r', kind: 'rwlock' });
  return out;
}

export function ask(target: Target, random: Random): Ask {
  if (target.kind === 'semaphore')
    return { target, role: 'permits', permits: random.int(1, SEMAPHORE_LIMIT) };
  if (target.kind === 'rwlock') return { target, role: random.chance(0.5) ? 'read' : 'write', permits: 1 };
  return { target, role: 'exclusive', permits: 1 };
}

export function acquire(
  lh: Leasehold,
  a: Ask,
  options: { timeout: number; signal?: AbortSignal; ttl?: number; owner: string },
): Promise<Lease> {
  const { name, kind } = a.target;
  if (kind === 'mutex') return lh.acquire(name, options);
  if (kind === 'fair') return lh.fairLock(name).acquire(options);
  if (kind === 'semaphore')
    return lh.semaphore(name, { limit: SEMAPHORE_LIMIT }).acquire({ ...options, permits: a.permits });
  const rw = lh.readWriteLock(name);
  return a.role === 'read' ? rw.read(options) : rw.write(options);
}

/** What holds a target on the server now: each holding value with the permits it holds. */
export function holdersOnServer(server: SimServer, target: Target): Map<string, number> {
  const out = new Map<string, number>();
  const now = performance.now() + server.offset;
  const live = (key: string) => {
    const entry = server.entry(key);
    if (entry === undefined || (entry.expiresAt !== undefined && entry.expiresAt <= now)) return undefined;
    return entry.value;
  };
  const one = (key: string) => {
    const value = live(key);
    if (typeof value === 'string') out.set(value, 1);
  };
  const members = (key: string, strip: boolean) => {
    const value = live(key);
    if (!(value instanceof SortedSet)) return;
    for (const { member, score } of value.range(0, -1)) {
      if (score <= now) continue;
      const holder = strip ? member.slice(0, member.lastIndexOf(':')) : member;
      out.set(holder, (out.get(holder) ?? 0) + 1);
    }
  };
  const { name, kind } = target;
  if (kind === 'mutex') one(mutexLayout.keys(PREFIX, name).lock);
  else if (kind === 'fair') one(fairLayout.keys(PREFIX, name).lock);
  else if (kind === 'semaphore') members(semaphoreLayout.keys(PREFIX, name).set, true);
  else {
    const keys = rwLayout.keys(PREFIX, name);
    one(keys.writer);
    members(keys.readers, false);
  }
  return out;
}

/**
 * A read-write lock's waiting writers whose registrations have not lapsed: writer preference keeps
 * readers out while any is registered, a writer that stops responding until its registration
 * lapses, at most its ttl (docs/rwlock.md).
 */
export function waitingWriters(server: SimServer, target: Target): string[] {
  if (target.kind !== 'rwlock') return [];
  const entry = server.entry(rwLayout.keys(PREFIX, target.name).waiting);
  if (entry === undefined || !(entry.value instanceof SortedSet)) return [];
  const now = performance.now() + server.offset;
  if (entry.expiresAt !== undefined && entry.expiresAt <= now) return [];
  return entry.value
    .range(0, -1)
    .filter(({ score }) => score > now)
    .map(({ member }) => member);
}

/**
 * A fair lock's first in line, as Redis keeps it (undefined when the line is empty): a waiter that
 * stops responding keeps that place until its deadline (docs/fair-lock.md), whoever waits behind.
 */
export function firstInLine(server: SimServer, target: Target): string | undefined {
  if (target.kind !== 'fair') return undefined;
  const entry = server.entry(fairLayout.keys(PREFIX, target.name).queue);
  if (entry === undefined || !(entry.value instanceof SortedSet)) return undefined;
  const now = performance.now() + server.offset;
  if (entry.expiresAt !== undefined && entry.expiresAt <= now) return undefined;
  return entry.value.range(0, 0)[0]?.member;
}

/** The keys where Redis keeps a target's waiters: queues, and records (hashes). */
export function waiterKeys(target: Target): string[] {
  const { name, kind } = target;
  if (kind === 'mutex') {
    const k = mutexLayout.keys(PREFIX, name);
    return [k.waiters, k.grants, k.recorded];
  }
  if (kind === 'fair') {
    const k = fairLayout.keys(PREFIX, name);
    return [k.queue, k.deadlines, k.grants];
  }
  if (kind === 'semaphore') {
    const k = semaphoreLayout.keys(PREFIX, name);
    return [k.waiters, k.grants];
  }
  const k = rwLayout.keys(PREFIX, name);
  return [k.waiting, k.grants, k.readQueue, k.readGrants];
}
