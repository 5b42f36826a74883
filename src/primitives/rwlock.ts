import { optionalText } from '../base/replies.ts';
import { grantRecord } from '../engine/grants.ts';
import { type GrantTicket, ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import type { AcquireOptions, OnceOptions } from '../options/index.ts';
import { loadScript, scripts as mutexScripts } from '../scripts/index.ts';
import { Handle } from './handle.ts';
import {
  fence,
  type Holder,
  holder,
  type InspectionSpec,
  num,
  pairs,
  registered,
  type Waiter,
  waiter,
} from './inspection.ts';
import { layout } from './layout.ts';
import { type LeaseWork, withLease } from './with-lease.ts';

const scripts = {
  read: loadScript('rwlock-read'),
  write: loadScript('rwlock-write'),
  withdraw: loadScript('rwlock-withdraw'),
  readExtend: loadScript('rwlock-read-extend'),
  readRelease: loadScript('rwlock-read-release'),
  writeRelease: loadScript('rwlock-write-release'),
};

/**
 * The read-write lock's keys: writer, readers, waiting writers, fencing and reader-release
 * counters, the records of waiting writers registered for a direct grant, and the queue and
 * records of waiting readers registered for one.
 */
export const rwLayout = layout({
  writer: 'rw:writer',
  readers: 'rw:readers',
  waiting: 'rw:waiting',
  fence: 'rw:fence',
  released: 'rw:released',
  grants: 'rw:grants',
  readQueue: 'rw:rqueue',
  readGrants: 'rw:rgrants',
});

type RwKeys = ReturnType<typeof rwLayout.keys>;
const rwKeys = rwLayout.keys;

/** A read-write lock as inspection reads it: `{now, fence, writer, pttl, readers, waiting}`. */
export const rwInspection: InspectionSpec<keyof RwKeys> = {
  script: loadScript('inspect-rwlock'),
  keys: ['writer', 'readers', 'waiting', 'fence', 'readQueue'],
  state: ['writer', 'readers', 'waiting', 'fence', 'readQueue'],
  held: ['writer', 'readers'],
  parse(name, r) {
    const now = num(r[0]);
    const writer = optionalText(r[2]);
    const readers = pairs(r[4]);
    const waiting = pairs(r[5]);
    if (optionalText(r[1]) === undefined && writer === undefined && readers.length + waiting.length === 0)
      return undefined;
    const last = fence(r[1]);
    const holders: Holder[] = [];
    if (writer !== undefined) holders.push({ ...holder(writer, num(r[3]), last), role: 'writer' });
    for (const [value, expiry] of readers)
      holders.push({ ...holder(value, expiry - now, undefined), role: 'reader' });
    // Writers first: a waiting writer keeps new readers out, so it gets in before them.
    const waiters = waiting.map(
      ([value, deadline]): Waiter => ({ ...waiter(value, deadline, now), role: 'writer' }),
    );
    waiters.push(...registered(r[7], r[8], 'reader'));
    const queued = waiting.length + (num(r[6]) || 0);
    return { name, primitive: 'rwlock', holders, waiters, lastFencingToken: last, queued };
  },
};

const allKeys = (k: RwKeys) => [k.writer, k.readers, k.waiting, k.fence, k.released, k.mark];
/** A read release (and a registered reader's withdraw): it may grant the write lease. */
const readRelease = (k: RwKeys, stored: string) => ({
  script: scripts.readRelease,
  keys: [k.readers, k.released, k.writer, k.waiting, k.fence, k.grants, k.readQueue, k.readGrants, k.mark],
  args: [stored],
});

/**
 * A read lease: a member of the readers' sorted set scored by its expiry in Redis's clock, each
 * extended and expiring on its own. Every reader's extension writes that set, so a reader
 * verifies only on a flush or reconnect (see Holding.policy). Readers of one name share a queue.
 */
export const readSpec: Spec<RwKeys, undefined> = {
  operation: 'read lock',
  primitive: 'rwlock',
  keys: rwKeys,
  acquire: (k, stored, ttl, _request, _join, ticket?: GrantTicket) => {
    const args = [stored, ms(ttl)];
    if (ticket === undefined) return { script: scripts.read, keys: allKeys(k), args };
    // Registered for a direct grant: the readers' queue and records, and this attempt's record.
    args.push(grantRecord(ticket));
    return { script: scripts.read, keys: [...allKeys(k), k.readQueue, k.readGrants], args };
  },
  extend: (k, stored, ttl) => ({ script: scripts.readExtend, keys: [k.readers], args: [stored, ms(ttl)] }),
  // The last reader out grants the write lease to a registered waiting writer.
  release: readRelease,
  // A reader's grant proves that no writer holds the lock.
  holding: (k) => ({
    key: k.readers,
    policy: 'reset-only',
    wake: [k.readers, k.writer],
    excludes: [k.writer],
  }),
  waiting: (k) => ({ key: k.readers, watch: [k.writer, k.waiting], shared: true }),
  // Direct grants: a write release, or the last waiting writer giving up, grants read leases to
  // the registered waiting readers when no writer waits.
  grants: {
    withdraw: readRelease,
    // 1: a grant had made it a reader and the withdraw gave that lease back: this process's
    // writers try again (no push comes for its own writes).
    withdrawn: (reply, k) => (Number(reply) === 1 ? k.writer : undefined),
  },
};

/**
 * The write lease: a string key, extended and released with the mutex's own scripts. A waiting
 * writer registers in a second sorted set, which keeps new readers out (writer preference).
 */
export const writeSpec: Spec<RwKeys, undefined> = {
  operation: 'write lock',
  primitive: 'rwlock',
  keys: rwKeys,
  acquire: (k, stored, ttl, _request, join, ticket?: GrantTicket) => {
    const args = [stored, ms(ttl), join ? '1' : '0'];
    if (ticket === undefined) return { script: scripts.write, keys: allKeys(k), args };
    // Registered for a direct grant: the records key and this attempt's record.
    args.push(grantRecord(ticket));
    return { script: scripts.write, keys: [...allKeys(k), k.grants], args };
  },
  extend: (k, stored, ttl) => ({ script: mutexScripts.extend, keys: [k.writer], args: [stored, ms(ttl)] }),
  // Compare-and-delete, then a direct grant to a registered waiting writer, if any.
  release: (k, stored) => ({
    script: scripts.writeRelease,
    keys: [k.writer, k.readers, k.waiting, k.fence, k.grants, k.readQueue, k.readGrants, k.mark],
    args: [stored],
  }),
  // The writer's grant proves that no reader holds the lock either (expired ones were dropped).
  holding: (k) => ({
    key: k.writer,
    policy: 'verify',
    wake: [k.readers, k.writer],
    excludes: [k.writer, k.readers],
  }),
  // Each waiting writer's stored value is its registration among the waiting (Spec.registers).
  waiting: (k) => ({ key: k.writer, watch: [k.writer, k.released], shared: false }),
  registers: {
    withdraw: (k, stored) => ({ script: scripts.withdraw, keys: [k.waiting], args: [stored] }),
    // Readers of this process were kept out by the registration: let them try again at once.
    withdrawn: (_reply, k) => k.readers,
  },
  // Direct grants: a write release, the last read release or a withdraw that frees the lock
  // grants the write lease to a registered waiting writer and publishes it (or, when no writer
  // waits, read leases to the registered waiting readers).
  grants: {
    withdraw: (k, stored) => ({
      script: scripts.withdraw,
      keys: [k.waiting, k.writer, k.readers, k.fence, k.grants, k.readQueue, k.readGrants, k.mark],
      args: [stored],
    }),
    // 2: a grant had made it the writer and the withdraw freed the lease (and granted it on or
    // not): this process's writers and readers try again; otherwise only its readers, which the
    // registration kept out.
    withdrawn: (reply, k) => (Number(reply) === 2 ? [k.readers, k.writer] : k.readers),
  },
};

/**
 * A read-write lock: many readers or one writer. Writer-preferring: once a writer waits, new
 * readers wait behind it, so a stream of readers cannot starve writers. Each reader's lease
 * extends and expires on its own.
 *
 * @example
 * const config = lh.readWriteLock('config');
 * {
 *   await using r = await config.read();
 *   use(await load());
 * }
 * await using w = await config.write({ timeout: 5_000 });
 * await save(next, { fence: w.fencingToken });
 */
export class ReadWriteLock extends Handle {
  /** Waits for a read lease: no writer holds the lock and none is waiting. */
  read(options?: AcquireOptions): Promise<Lease> {
    return this.wait(readSpec, undefined, options);
  }

  /** Waits for the write lease: no writer and no reader. Blocks new readers while it waits. */
  write(options?: AcquireOptions): Promise<Lease> {
    return this.wait(writeSpec, undefined, options);
  }

  /** One attempt at a read lease; undefined when a writer holds or waits for the lock. */
  /**
   * Runs `fn` holding a read lease and releases it afterwards, also when `fn` throws. `fn` gets
   * the lease and a signal that aborts when the lease is lost or `options.signal` aborts.
   */
  withRead<T>(fn: LeaseWork<Lease, T>, options?: AcquireOptions): Promise<T> {
    return withLease(() => this.read(options), fn, options, 'withRead');
  }

  /** As withRead, holding the write lease. */
  withWrite<T>(fn: LeaseWork<Lease, T>, options?: AcquireOptions): Promise<T> {
    return withLease(() => this.write(options), fn, options, 'withWrite');
  }

  tryRead(options?: OnceOptions): Promise<Lease | undefined> {
    return this.once(readSpec, undefined, options, 'tryRead');
  }

  /** One attempt at the write lease; undefined when held. Does not register as waiting. */
  tryWrite(options?: OnceOptions): Promise<Lease | undefined> {
    return this.once(writeSpec, undefined, options, 'tryWrite');
  }
}
