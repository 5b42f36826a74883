/**
 * Input properties of the other entry points: the election (campaign, proclaim, leader,
 * observe), inspect() and list(), Leasehold.connect()'s options, and the one that ends every
 * kind of case the same way: once leases are released and instances closed, every key under the
 * prefix has a TTL.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  type Lease,
  type Leasehold,
  Leasehold as LeaseholdClass,
  LockTimeoutError,
  type Primitive,
} from '../../../src/index.ts';
import { checkLease, expectWait, ttlOf } from './oracle.ts';
import { releasedOrGone } from './shared.ts';
import * as space from './space.ts';
import { assertInputError, materialize, settle, show } from './space.ts';
import { assertAllExpire, type CaseGuard, type Target, WORLD_TTL } from './world.ts';

const waitOptions = { timeout: space.timeout, ttl: space.ttl, owner: space.owner, signal: space.signal };
const PRIMITIVE_NAMES: Primitive[] = ['mutex', 'semaphore', 'rwlock', 'fair', 'election'];

/** election(name).campaign(value, options), then proclaim(value2), leader() and observe(). */
export function electionProperty(target: Target, guard: CaseGuard): Promise<void> {
  const arb = fc.record({
    name: space.name,
    value: space.value,
    next: space.value,
    busy: fc.boolean(),
    o: space.optionsOf(waitOptions),
  });
  return fc.assert(
    fc.asyncProperty(arb, (c) =>
      guard.run(target, show('election', c), async (world) => {
        const what = show('election', c);
        const name = c.name.value as string;
        if (!c.name.ok) {
          const outcome = await settle(() => world.a.election(name));
          assert.ok(!outcome.ok, `${what}: accepted a bad name`);
          return assertInputError(outcome.error, ['name'], what);
        }
        const election = world.a.election(name);
        const { options, controller } = materialize(c.o);
        const start = () => election.campaign(c.value.value as string, options as never) as Promise<Lease>;
        const bad = [...c.o.bad, ...(c.value.ok ? [] : ['value'])];
        if (bad.length > 0) {
          const outcome = await settle(start);
          assert.ok(!outcome.ok, `${what}: accepted bad ${bad.join(', ')}`);
          return assertInputError(outcome.error, bad, what);
        }
        const leader = c.busy ? await world.b.election(name).campaign('other') : undefined;
        const timeout = c.o.chosen['timeout'] as number | undefined;
        const free = async () => void (await leader?.release());
        const term = await expectWait({ what, start, busy: c.busy, timeout, controller, free });
        if (term === undefined) return void (await leader?.release());
        // Each check reads first and asks term.lost after: a term of 12 ms may end meanwhile, and
        // the holder always hears of that before Redis drops the key (its validity is shorter).
        const elected = await election.leader();
        if (!term.lost) {
          assert.deepEqual(elected, { value: c.value.value, fencingToken: term.fencingToken });
          const proclaim = (term as unknown as { proclaim(v: unknown): Promise<void> }).proclaim;
          const outcome = await settle(() => proclaim.call(term, c.next.value));
          if (!c.next.ok) {
            assert.ok(!outcome.ok, `${what}: proclaim accepted a bad value`);
            assertInputError(outcome.error, ['value'], what);
          } else if (!term.lost) {
            if (!outcome.ok) throw outcome.error;
            const now = await election.leader();
            const stop = new AbortController();
            const first = await election.observe({ signal: stop.signal }).next();
            stop.abort();
            if (!term.lost) {
              assert.equal(now?.value, c.next.value, `${what}: leader() after proclaim`);
              assert.equal(first.value?.leader?.value, c.next.value, `${what}: observe()'s latest change`);
            }
          }
        }
        const want = {
          name,
          primitive: 'election' as const,
          ttl: ttlOf(c.o.chosen, WORLD_TTL),
          owner: c.o.chosen['owner'] as string | undefined,
        };
        await checkLease(world, term, want, what);
        await leader?.release();
      }),
    ),
    { numRuns: target.runs },
  );
}

/** inspect(name, { primitive, limit }) and list({ prefix, primitive, limit }) of a held mutex. */
export function inspectProperty(target: Target, guard: CaseGuard): Promise<void> {
  const primitive = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...PRIMITIVE_NAMES).map((value) => ({ value, ok: true })) },
    fc.constantFrom('lock', 'Mutex', '', 1, null).map((value) => ({ value, ok: false })),
  );
  const limit = space.integer(1, space.MAX_LIST_LIMIT);
  const arb = fc.record({
    name: space.name,
    list: fc.boolean(),
    o: space.optionsOf({ primitive, limit }),
    cut: fc.nat(3),
  });
  return fc.assert(
    fc.asyncProperty(arb, (c) =>
      guard.run(target, show('inspect', c), async (world) => {
        const what = show('inspect', c);
        const name = c.name.value as string;
        const { options } = materialize(c.o);
        if (!c.list) {
          const bad = [...c.o.bad, ...(c.name.ok ? [] : ['name'])];
          if (bad.length > 0) {
            const outcome = await settle(() => world.a.inspect(name, options as never));
            assert.ok(!outcome.ok, `${what}: accepted bad ${bad.join(', ')}`);
            return assertInputError(outcome.error, bad, what);
          }
        }
        if (c.list && c.o.bad.length > 0) {
          const outcome = await settle(() => world.a.list(options as never));
          assert.ok(!outcome.ok, `${what}: accepted bad ${c.o.bad.join(', ')}`);
          return assertInputError(outcome.error, c.o.bad, what);
        }
        if (!c.name.ok) return;
        const lease = await world.a.acquire(name, { owner: 'inspector' });
        try {
          const asked = c.o.chosen['primitive'] as Primitive | undefined;
          const expectFound = asked === undefined || asked === 'mutex';
          if (!c.list) {
            const state = await world.a.inspect(name, options as never);
            if (!expectFound) return assert.equal(state, undefined, `${what}: found a ${asked}`);
            assert.equal(state?.name, name, `${what}: inspect().name`);
            assert.equal(state?.holders[0]?.owner, 'inspector', `${what}: holder`);
            return;
          }
          // A prefix of the name (whatever characters it holds) lists it; SCAN's glob is escaped.
          const prefix = [...name].slice(0, Math.max(0, [...name].length - c.cut)).join('');
          const found = await world.a.list({ ...(options as object), prefix });
          const mine = found.filter((s) => s.name === name);
          for (const s of found)
            assert.ok(s.name.startsWith(prefix), `${what}: listed ${s.name} for ${prefix}`);
          const cap = (c.o.chosen['limit'] as number | undefined) ?? 100;
          assert.ok(found.length <= cap, `${what}: ${found.length} entries over the limit ${cap}`);
          if (expectFound && found.length < cap) assert.equal(mine.length, 1, `${what}: not listed once`);
        } finally {
          await lease.release();
        }
      }),
    ),
    { numRuns: target.runs },
  );
}

/** Leasehold.connect(options): bad options are a TypeError; good ones mean what they say. */
export function connectProperty(target: Target, guard: CaseGuard): Promise<void> {
  const prefix = fc.oneof(
    fc.constantFrom('app', 'a:b', 'ключ', 'x'.repeat(space.MAX_NAME)).map((value) => ({ value, ok: true })),
    fc
      .constantFrom('', 'a{b', 'b}', 'x'.repeat(space.MAX_NAME + 1), '\ud800', 7, null)
      .map((value) => ({ value, ok: false })),
  );
  const positive = fc.oneof(
    fc.constantFrom(1, 20, 100, space.MAX_TTL).map((value) => ({ value, ok: true })),
    fc
      .constantFrom(0, -1, space.MAX_TTL + 1, Infinity, Number.NaN, '100', null)
      .map((value) => ({ value, ok: false })),
  );
  const connectTimeout = fc.oneof(
    fc
      .constantFrom(1_000, 5_000, space.MAX_TTL, 2 ** 31, 1e12, Infinity)
      .map((value) => ({ value, ok: true })),
    fc.constantFrom(0, -1, Number.NaN, '5000', null).map((value) => ({ value, ok: false })),
  );
  // A valid commandTimeout far below a round trip would give every connection up: not drawn.
  const commandTimeout = fc.oneof(
    fc.constantFrom(1_000, 5_000, space.MAX_TTL).map((value) => ({ value, ok: true })),
    fc
      .constantFrom(0, -1, Number.NaN, Infinity, space.MAX_TTL + 1, '5000', null)
      .map((value) => ({ value, ok: false })),
  );
  const oneOf = (values: string[]) =>
    fc.oneof(
      fc.constantFrom(...values).map((value) => ({ value, ok: true })),
      fc.constantFrom('', 'Auto', 1, null).map((value) => ({ value, ok: false })),
    );
  const arb = space.optionsOf({
    ttl: space.ttl,
    retryDelay: positive,
    connectTimeout,
    commandTimeout,
    notifications: oneOf(['auto', 'polling']),
    onDisconnect: oneOf(['abort', 'reverify']),
    owner: space.owner,
    prefix,
  });
  return fc.assert(
    fc.asyncProperty(arb, (o) =>
      guard.run(target, show('connect', o), async (world) => {
        const what = show('connect', o);
        if (o.options === undefined) return;
        const options = o.options;
        if (o.bad.length > 0) {
          // Not an object at all: straight to connect(), with nothing of the world's to merge in.
          const connect = o.bad.includes('options')
            ? () => LeaseholdClass.connect(options as never)
            : () => world.connect(options as never);
          const outcome = await settle(connect);
          if (outcome.ok) await outcome.value.close();
          assert.ok(!outcome.ok, `${what}: accepted bad ${o.bad.join(', ')}`);
          return assertInputError(outcome.error, o.bad, what);
        }
        const lh: Leasehold = await world.connect(options as never);
        try {
          const ttl = ttlOf(o.chosen, WORLD_TTL);
          const owner = o.chosen['owner'] as string | undefined;
          const lease = await lh.acquire('connected');
          assert.equal(lease.ttl, ttl, `${what}: the instance's ttl`);
          const blocked = await lh.acquire('connected', { timeout: 5 }).catch((error: unknown) => error);
          if (blocked instanceof LockTimeoutError) {
            // Held: the second caller timed out, as it should.
          } else if (blocked instanceof Error) {
            throw blocked;
          } else {
            // A lease of 12 ms may be lost before the second call (a busy machine): then it may win.
            assert.ok(lease.lost, `${what}: two leases on one name`);
            await (blocked as Lease).release();
          }
          const state = await lh.inspect('connected');
          if (owner !== undefined && !lease.lost)
            assert.equal(state?.holders[0]?.owner, owner, `${what}: owner`);
          assert.ok(await releasedOrGone(lease), `${what}: release`);
        } finally {
          await lh.close();
        }
      }),
    ),
    { numRuns: Math.ceil(target.runs / 2) },
  );
}

/** Another valid name, distinct from `name` (a 1,024-unit name has no room for one more). */
const sibling = (name: string): string =>
  name.length < space.MAX_NAME ? `${name}+` : `${[...name].slice(0, 500).join('')}+`;

/**
 * Any mix of calls on every primitive, then every lease released and waiter ended: each key
 * under the prefix has a TTL (a key without one would outlive every lock it served).
 */
export function expiryProperty(target: Target, guard: CaseGuard): Promise<void> {
  const step = fc.record({
    kind: fc.constantFrom(
      'mutex',
      'semaphore',
      'read',
      'write',
      'fair',
      'election',
      'multi',
      'force',
      'wait',
    ),
    name: space.name.filter((n) => n.ok),
    ttl: fc.constantFrom(12, 1_000, 60_000, space.MAX_TTL),
  });
  return fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), (steps) =>
      guard.run(target, show('expiry', steps), async (world) => {
        const leases: Lease[] = [];
        for (const s of steps) {
          const name = s.name.value as string;
          const o = { ttl: s.ttl };
          const { a, b } = world;
          const taken = await {
            mutex: () => a.tryAcquire(name, o),
            force: () => a.forceAcquire(name, o),
            semaphore: () => a.semaphore(name, { limit: 2 }).tryAcquire(o),
            read: () => a.readWriteLock(name).tryRead(o),
            write: () => a.readWriteLock(name).tryWrite(o),
            fair: () => a.fairLock(name).tryAcquire(o),
            election: () =>
              a
                .election(name)
                .campaign('v', { ...o, timeout: 0 })
                .catch(() => undefined),
            multi: () => a.multiLock([name, sibling(name)]).tryAcquire(o),
            // A waiter that gives up: fair and rwlock waiters register in Redis while they wait.
            wait: async () => {
              const held = await b.fairLock(name).tryAcquire();
              await a
                .fairLock(name)
                .acquire({ timeout: 5 })
                .catch(() => undefined);
              await a
                .readWriteLock(name)
                .write({ timeout: 5 })
                .catch(() => undefined);
              return held;
            },
          }[s.kind]();
          if (taken !== undefined) leases.push(taken);
        }
        for (const lease of leases) await lease.release();
        await assertAllExpire(world, show('expiry', steps));
      }),
    ),
    { numRuns: target.runs },
  );
}
