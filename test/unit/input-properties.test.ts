// Issue 28: every input in range does what it says. Property tests over every public entry point
// on the in-memory backend (a fresh one per case, so many cases run in seconds): random valid and
// invalid names, options, permits, limits and durations; each case behaves as documented or throws
// the documented TypeError, never hangs, never makes Node warn, never leaves an unhandled
// rejection, and leaves no key without a TTL. test/integration/input-properties.test.ts runs the
// same properties on a redis-server. fast-check prints the seed and the shrunk case on failure.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { keyFor } from '../../src/base/keys.ts';
import { keySlot } from '../../src/driver/cluster-topology.ts';
import {
  extendProperty,
  fairProperty,
  mutexProperty,
  rwlockProperty,
  semaphoreProperty,
} from '../harness/inputs/locks.ts';
import { multiLockProperty } from '../harness/inputs/multi.ts';
import {
  connectProperty,
  electionProperty,
  expiryProperty,
  inspectProperty,
} from '../harness/inputs/others.ts';
import * as space from '../harness/inputs/space.ts';
import { CaseGuard, memoryTarget } from '../harness/inputs/world.ts';

const target = memoryTarget(100);
const guard = new CaseGuard();
after(() => guard.dispose());

describe('every input in range does what it says (memory backend)', () => {
  test('mutex: acquire, tryAcquire, forceAcquire, withLock', () => mutexProperty(target, guard));
  test('lease.extend(ttl)', () => extendProperty(target, guard));
  test('semaphore: limit, permits, acquire, tryAcquire', () => semaphoreProperty(target, guard));
  test('readWriteLock: read, write, tryRead, tryWrite', () => rwlockProperty(target, guard));
  test('fairLock: acquire, tryAcquire', () => fairProperty(target, guard));
  test('multiLock(names, { ttl }): acquire, tryAcquire', () => multiLockProperty(target, guard));
  test('election: campaign, proclaim, leader, observe', () => electionProperty(target, guard));
  test('inspect() and list()', () => inspectProperty(target, guard));
  test('Leasehold.connect() options', () => connectProperty(target, guard));
  test('no key is left without a TTL, whatever was called', () => expiryProperty(target, guard));
});

test('every key of every accepted name hashes to one Cluster slot (its scripts need that)', () => {
  const suffixes = [
    '',
    'fence',
    'sem',
    'sem:fence',
    'sem:released',
    'rw:writer',
    'rw:readers',
    'rw:waiting',
    'rw:fence',
    'rw:released',
    'fair',
    'fair:queue',
    'fair:deadlines',
    'fair:arrivals',
    'fair:fence',
    'fair:turn:token~since~owner',
    'election',
    'election:fence',
    'election:log',
  ];
  fc.assert(
    fc.property(
      space.name.filter((n) => n.ok),
      (n) => {
        const slots = new Set(suffixes.map((suffix) => keySlot(keyFor('app', n.value as string, suffix))));
        assert.equal(slots.size, 1, `the keys of ${JSON.stringify(n.value)} span ${slots.size} slots`);
      },
    ),
    { numRuns: 500 },
  );
});

test('docs/errors.md states, per option, the ranges these properties check', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Accepted input'));
  assert.ok(section.length > 0, 'no "Accepted input" section');
  const options = [
    'url',
    'client',
    'driver',
    'nodes',
    'cluster',
    'sentinel',
    'durability',
    'backend',
    'prefix',
    'ttl',
    'notifications',
    'retryDelay',
    'connectTimeout',
    'onDisconnect',
    'owner',
    'timeout',
    'signal',
    'permits',
    'limit',
    'value',
    'primitive',
    'name',
    'names',
  ];
  for (const option of options) assert.ok(section.includes(`| \`${option}\``), `${option} has no row`);
  const bounds = [
    space.MIN_TTL,
    space.MAX_TTL,
    space.MAX_NAME,
    space.MAX_OWNER,
    space.MAX_VALUE,
    space.MAX_LIMIT,
    space.MAX_LIST_LIMIT,
    space.MAX_NAMES,
  ];
  for (const n of bounds) assert.ok(section.includes(n.toLocaleString('en-US')), `${n} is not stated`);
});
