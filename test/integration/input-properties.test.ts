// Issue 28 on a redis-server: the input properties of test/unit/input-properties.test.ts (every
// public entry point, random valid and invalid names, options, permits, limits and durations),
// fewer cases each, against real Redis and this run's client library and notification mode.
// One pair of instances per property; cases reuse it, so what one case leaves behind (a held
// name, a key without a TTL) fails a later one too.
import { after, before, describe, test } from 'node:test';
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
import { CaseGuard, redisTarget, type Target } from '../harness/inputs/world.ts';
import { mode } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';

let server: RedisServer | undefined;
let guard: CaseGuard;
before(async () => {
  server = await RedisServer.start();
  guard = new CaseGuard();
});
after(async () => {
  guard.dispose();
  await server?.stop();
});

/** A target whose shared instances close after each property (each property gets its own prefix). */
function each(property: (target: Target, guard: CaseGuard) => Promise<void>): () => Promise<void> {
  return async () => {
    const target = redisTarget(() => server as RedisServer, 40);
    try {
      await property(target, guard);
    } finally {
      await target.close();
    }
  };
}

describe(`every input in range does what it says (${mode})`, () => {
  test('mutex: acquire, tryAcquire, forceAcquire, withLock', each(mutexProperty));
  test('lease.extend(ttl)', each(extendProperty));
  test('semaphore: limit, permits, acquire, tryAcquire', each(semaphoreProperty));
  test('readWriteLock: read, write, tryRead, tryWrite', each(rwlockProperty));
  test('fairLock: acquire, tryAcquire', each(fairProperty));
  test('multiLock(names, { ttl }): acquire, tryAcquire', each(multiLockProperty));
  test('election: campaign, proclaim, leader, observe', each(electionProperty));
  test('inspect() and list()', each(inspectProperty));
  test('Leasehold.connect() options', each(connectProperty));
  test('no key is left without a TTL, whatever was called', each(expiryProperty));
});
