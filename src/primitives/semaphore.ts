import { optionalText, toNumber } from '../base/replies.ts';
import type { Engine } from '../engine/engine.ts';
import { grantRecord } from '../engine/grants.ts';
import { ms, type Spec } from '../engine/spec.ts';
import type { Lease } from '../lease.ts';
import { checkPermits, type SemaphoreAcquireOptions } from '../options/index.ts';
import { loadScript } from '../scripts/index.ts';
import { Handle } from './handle.ts';
import { fence, type Holder, holder, type InspectionSpec, num, pairs, registered } from './inspection.ts';
import { layout } from './layout.ts';
import { type LeaseWork, withLease } from './with-lease.ts';

/**
 * The semaphore's keys: its permits, its fencing counter, the counter releases bump, and the
 * queue and records of waiters registered for a direct grant (scripts/includes/grant-permits.lua).
 */
export const semaphoreLayout = layout({
  set: 'sem',
  fence: 'sem:fence',
  released: 'sem:released',
  waiters: 'sem:waiters',
  grants: 'sem:grants',
});

/** A semaphore as inspection reads it: `{now, fence, used, {member, expiry, ...}, queued, {waiter, ...}, queue pttl}`. */
export const semaphoreInspection: InspectionSpec<'set' | 'fence' | 'released' | 'waiters'> = {
  script: loadScript('inspect-semaphore'),
  keys: ['set', 'fence', 'waiters'],
  state: ['set', 'fence', 'waiters'],
  held: ['set'],
  parse(name, r) {
    const now = num(r[0]);
    const members = pairs(r[3]);
    if (optionalText(r[1]) === undefined && members.length === 0) return undefined;
    // Members are `<value>:<i>`, one per permit: one holder per value.
    const byValue = new Map<string, Holder>();
    for (const [member, expiry] of members) {
      const value = member.slice(0, member.lastIndexOf(':'));
      const known = byValue.get(value);
      if (known !== undefined) known.permits = (known.permits ?? 1) + 1;
      else byValue.set(value, { ...holder(value, expiry - now, undefined), permits: 1 });
    }
    return {
      name,
      primitive: 'semaphore',
      holders: [...byValue.values()],
      waiters: registered(r[5], r[6]),
      lastFencingToken: fence(r[1]),
      permitsInUse: num(r[2]),
      queued: num(r[4]) || 0,
    };
  },
};

const scripts = {
  acquire: loadScript('semaphore-acquire'),
  extend: loadScript('semaphore-extend'),
  release: loadScript('semaphore-release'),
  withdraw: loadScript('semaphore-withdraw'),
  count: loadScript('semaphore-count'),
};

type SemaphoreKeys = ReturnType<typeof semaphoreLayout.keys>;

/** What one acquisition asks for; kept on the lease for its extensions and release. */
interface PermitRequest {
  limit: number;
  permits: number;
}

/**
 * The semaphore as a spec: permits live in one sorted set per name (`<prefix>:{name}:sem`), one
 * member per permit scored by its expiry in Redis's own clock. Waiters track a release counter
 * rather than the set, so holders' extensions do not wake them; a holder verifies only on a
 * flush or reconnect, since every holder's extension writes the shared set.
 */
export const semaphoreSpec: Spec<SemaphoreKeys, PermitRequest> = {
  operation: 'semaphore acquire',
  primitive: 'semaphore',
  keys: semaphoreLayout.keys,
  acquire: (k, stored, ttl, { permits, limit }, _join, ticket) =>
    ticket === undefined
      ? {
          script: scripts.acquire,
          keys: [k.set, k.fence, k.released, k.mark],
          args: [stored, String(permits), String(limit), ms(ttl)],
        }
      : {
          // A waiter: registered for a direct grant when the semaphore is full.
          script: scripts.acquire,
          keys: [k.set, k.fence, k.released, k.mark, k.waiters, k.grants],
          args: [stored, String(permits), String(limit), ms(ttl), grantRecord(ticket, permits, limit)],
        },
  extend: (k, stored, ttl, { permits }) => ({
    script: scripts.extend,
    keys: [k.set],
    args: [stored, String(permits), ms(ttl)],
  }),
  // Gives the permits back, then grants free ones to registered waiters, if any.
  release: (k, stored, { permits }) => ({
    script: scripts.release,
    keys: [k.set, k.released, k.fence, k.waiters, k.grants, k.mark],
    args: [stored, String(permits)],
  }),
  // Waiters may register for a direct grant (Engine, Grants): one Redis, with pub/sub. A waiter
  // that gave up with permits granted meanwhile gives them back: this process's other waiters
  // hear no push for its own write, so they are woken here.
  grants: {
    withdraw: (k, stored, { permits }) => ({
      script: scripts.withdraw,
      keys: [k.set, k.released, k.fence, k.waiters, k.grants, k.mark],
      args: [stored, String(permits)],
    }),
    withdrawn: (reply, k) => (reply === 1 ? k.set : undefined),
  },
  holding: (k) => ({ key: k.set, policy: 'reset-only', wake: [k.set] }),
  // One local queue per number of permits asked: a waiter for 1 never waits behind one for 3 that
  // does not fit (a queue attempts for its head only). Local releases wake them by the set's key.
  waiting: (k, { permits }) => ({
    key: `${k.set}#${permits}`,
    watch: [k.released],
    wakeOn: [k.set],
    shared: true,
  }),
};

/**
 * A counting semaphore: at most `limit` permits of one name are held at a time, across every
 * process. Each acquisition returns a Lease holding one or more permits; permits of a crashed
 * holder return once their TTL has passed on Redis's clock.
 *
 * @example
 * const uploads = lh.semaphore('uploads', { limit: 10 });
 * await using permit = await uploads.acquire({ timeout: 5_000 });
 * await upload(file, { signal: permit.signal });
 */
export class Semaphore extends Handle {
  /** How many permits exist. */
  readonly limit: number;

  /** @internal Use `lh.semaphore(name, { limit })`. */
  constructor(engine: Engine, name: string, limit: number, defaults: { ttl: number }) {
    super(engine, name, defaults);
    this.limit = limit;
  }

  /**
   * Waits until `permits` permits (default 1) are free and takes them all at once. Rejects with
   * LockTimeoutError after `timeout`, `signal.reason` on abort, ConnectionClosedError on close().
   */
  acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    try {
      const { request, rest } = this.#requestOf(options);
      return this.wait(semaphoreSpec, request, rest);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt: the Lease, or undefined when not enough permits are free. */
  async tryAcquire(
    options?: Omit<SemaphoreAcquireOptions, 'timeout' | 'signal'>,
  ): Promise<Lease | undefined> {
    const { request, rest } = this.#requestOf(options);
    return this.once(semaphoreSpec, request, rest, 'tryAcquire');
  }

  /**
   * Runs `fn` holding `permits` permits (default 1) and gives them back afterwards, also when `fn`
   * throws. `fn` gets the lease and a signal that aborts when the lease is lost or
   * `options.signal` aborts.
   * @example await uploads.withPermit((permit, signal) => upload(file, { signal }), { timeout: 5_000 });
   */
  withPermit<T>(fn: LeaseWork<Lease, T>, options?: SemaphoreAcquireOptions): Promise<T> {
    return withLease(() => this.acquire(options), fn, options, 'withPermit');
  }

  /** Permits currently held (unexpired by Redis's clock), by every process. */
  async count(): Promise<number> {
    const k = semaphoreLayout.keys(this.engine.prefix, this.name);
    const call = { script: scripts.count, keys: [k.set], args: [] };
    return toNumber(await this.engine.eval(semaphoreSpec, call, 'semaphore count'));
  }

  #requestOf(options: unknown): { request: PermitRequest; rest: Record<string, unknown> } {
    const { permits, rest } = checkPermits(options, this.limit);
    return { request: { permits, limit: this.limit }, rest };
  }
}
