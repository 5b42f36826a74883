import assert from 'node:assert/strict';
import { test } from 'node:test';
import { monotonic } from '../../src/base/clock.ts';
import type { Context } from '../../src/engine/context.ts';
import { GiveBacks } from '../../src/engine/give-backs.ts';
import { HeldLeases } from '../../src/engine/held-leases.ts';
import { Renewer } from '../../src/engine/renewer.ts';
import { Dispatcher } from '../../src/notify/dispatcher.ts';
import type { Runner } from '../../src/runners/runner.ts';
import { countingCore } from '../harness/lease-core.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

test('changedSince: a push for a key after a moment, a flush, and forgotten pushes', () => {
  const d = new Dispatcher();
  const before = monotonic();
  assert.equal(d.changedSince('a', before), false);
  d.invalidate(['a']);
  assert.equal(d.changedSince('a', before), true);
  assert.equal(d.changedSince('b', before), false);
  assert.equal(d.changedSince('a', monotonic() + 1), false, 'not after the push');
  d.invalidate(null);
  assert.equal(d.changedSince('b', before), true, 'a flush may have changed anything');
  const later = monotonic() + 1;
  for (let i = 0; i < 10_001; i++) d.invalidate([`k${i}`]);
  assert.equal(d.changedSince('anything', before), true, 'evicted pushes count as changes');
  assert.equal(d.changedSince('k10000', later), true);
});

function engine(): { engine: HeldLeases; dispatcher: Dispatcher; renewer: Renewer } {
  const dispatcher = new Dispatcher();
  const renewer = new Renewer();
  const ctx: Context = {
    runner: { tracking: true } as Runner,
    single: undefined,
    dispatcher,
    grants: undefined,
    renewer,
    prefix: 't',
    ttl: 60_000,
    retryDelay: 100,
    commandTimeout: 5_000,
    owner: 'test',
    closed: false,
    emit() {},
    giveBacks: new GiveBacks(() => {}, 100),
  };
  return { engine: new HeldLeases(ctx, () => {}), dispatcher, renewer };
}

// Regression: a push that arrived between the acquire being sent and its reply (over a REDIRECT
// connection, or in the same chunk as the reply) found no listener and was lost; the holder then
// trusted its lease until its next extension, a third of the TTL later.
test('a push that overtook the acquisition reply re-verifies the new lease at once', async () => {
  const { engine: k, dispatcher, renewer } = engine();
  const core = countingCore();
  const sentAt = monotonic();
  dispatcher.invalidate(['t:{job}']);
  k.hold(
    { name: 'job', stored: 'x', fencingToken: 1n, ttl: 60_000, sentAt, core },
    { key: 't:{job}', policy: 'verify' },
  );
  await tick();
  assert.equal(core.batches, 1, 'verified at once');
  renewer.close();
});

test('without such a push a new lease is not verified before its renewal time', async () => {
  const { engine: k, dispatcher, renewer } = engine();
  const core = countingCore();
  dispatcher.invalidate(['t:{job}']);
  const sentAt = monotonic() + 0.001;
  k.hold(
    { name: 'job', stored: 'x', fencingToken: 1n, ttl: 60_000, sentAt, core },
    { key: 't:{job}', policy: 'verify' },
  );
  await tick();
  assert.equal(core.batches, 0);
  renewer.close();
});
