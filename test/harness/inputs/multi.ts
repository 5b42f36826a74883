/** The input property of multiLock(names, { ttl }): see locks.ts for the shape of every case. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Lease } from '../../../src/index.ts';
import { expectWait, ttlOf } from './oracle.ts';
import { expectRefused, expectTry, releasedOrGone, waitOptions } from './shared.ts';
import * as space from './space.ts';
import { materialize, type Options, show } from './space.ts';
import { type CaseGuard, type Target, WORLD_TTL } from './world.ts';

/** multiLock(names, { ttl }).acquire / tryAcquire, with one of the names held elsewhere or not. */
export function multiLockProperty(target: Target, guard: CaseGuard): Promise<void> {
  const names: fc.Arbitrary<space.Choice[]> = fc.oneof(
    {
      weight: 8,
      arbitrary: fc.uniqueArray(space.name, { minLength: 1, maxLength: 4, selector: (n) => n.value }),
    },
    fc.constant<space.Choice[]>([]),
    fc.constant<space.Choice[]>(
      Array.from({ length: space.MAX_NAMES + 1 }, (_, i) => ({ value: `n${i}`, ok: true })),
    ),
    fc.constant<space.Choice[]>(
      Array.from({ length: space.MAX_NAMES }, (_, i) => ({ value: `n${i}`, ok: true })),
    ),
    fc.constant<space.Choice[]>([
      { value: 'twice', ok: true },
      { value: 'twice', ok: true },
    ]),
  );
  const arb = fc.record({
    names,
    lockOptions: space.optionsOf({ ttl: space.ttl }),
    wait: fc.boolean(),
    busy: fc.boolean(),
    o: fc.oneof(space.optionsOf(waitOptions)),
  });
  return fc.assert(
    fc.asyncProperty(arb, (c) =>
      guard.run(target, show('multiLock', c), async (world) => {
        const what = show('multiLock', c);
        const list = c.names.map((n) => n.value as string);
        const values = new Set(list);
        const namesOk =
          list.length >= 1 &&
          list.length <= space.MAX_NAMES &&
          values.size === list.length &&
          c.names.every((n) => n.ok);
        const factoryBad = [...(namesOk ? [] : ['names']), ...c.lockOptions.bad];
        const lockOptions = materialize(c.lockOptions).options;
        if (factoryBad.length > 0) {
          return expectRefused(world, { bad: factoryBad }, what, () =>
            world.a.multiLock(list, lockOptions as never),
          );
        }
        const multi = world.a.multiLock(list, lockOptions as never);
        // One attempt takes no timeout or signal: tryAcquire gets only the rest.
        const o: Options = c.wait
          ? c.o
          : { ...c.o, bad: [...c.o.bad, ...['timeout', 'signal'].filter((k) => k in (c.o.chosen ?? {}))] };
        const { options, controller } = materialize(o);
        const start = () =>
          (c.wait ? multi.acquire(options as never) : multi.tryAcquire(options as never)) as Promise<Lease>;
        if (o.bad.length > 0) return expectRefused(world, o, what, start);
        const blocked = list[list.length - 1] as string;
        const holder = c.busy ? await world.b.acquire(blocked) : undefined;
        const ttl = ttlOf(o.chosen, ttlOf(c.lockOptions.chosen, WORLD_TTL));
        let lease: Lease | undefined;
        if (c.wait) {
          const timeout = o.chosen['timeout'] as number | undefined;
          const free = async () => void (await holder?.release());
          lease = await expectWait({ what, start, busy: c.busy, timeout, controller, free });
        } else {
          lease = await expectTry(start, c.busy, ttl, what);
        }
        if (lease !== undefined) {
          const tokens = (lease as unknown as { fencingTokens: Map<string, bigint> }).fencingTokens;
          assert.deepEqual([...tokens.keys()].sort(), [...list].sort(), `${what}: fencingTokens`);
          assert.equal(lease.ttl, ttl, `${what}: ttl`);
          for (const one of list) {
            const state = await world.a.inspect(one, { primitive: 'mutex' });
            assert.ok(lease.lost || state?.holders[0]?.token === lease.token, `${what}: ${one} not held`);
          }
          assert.ok(await releasedOrGone(lease), `${what}: release`);
        }
        await holder?.release();
      }),
    ),
    { numRuns: target.runs },
  );
}
