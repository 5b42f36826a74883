// One process never holds a key twice (issue 22, item 4). Redis sends no push for a connection's
// own writes (NOLOOP), and a polling instance hears of nothing until its next extension: a grant
// made by this instance must end its own other leases on the same keys at once, whatever the
// primitive. Each pair: a first lease of this instance, its key taken over (by this instance's
// forceAcquire) or vanished unheard (a polling instance), then a second lease on the same key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Lease, Leasehold, LockLostError } from '../../src/index.ts';
import { connect, lockKey, mode, uniquePrefix } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server?.stop();
});

/** A lease this test expects to have been ended by the grant just made. */
function assertEnded(lease: Lease, what: string): void {
  assert.equal(lease.lost, true, `${what}: the earlier lease must end the moment the new one is granted`);
  assert.equal((lease.signal.reason as LockLostError).reason, 'taken');
}

/**
 * An instance that hears of nothing (polling, and its next extension far away), so that only
 * the grant itself can end the earlier lease; the prefix is returned to delete keys under it.
 */
async function deaf(): Promise<{ lh: Leasehold; prefix: string }> {
  const prefix = uniquePrefix('own');
  const lh = await connect(server, { prefix, ttl: 30_000, notifications: 'polling', retryDelay: 10_000 });
  return { lh, prefix };
}

describe(`one process never holds a key twice (${mode})`, () => {
  test("forceAcquire ends this process's mutex lease and multiLock lease on the name", async () => {
    const lh = await connect(server, { ttl: 30_000 });
    try {
      const mutex = await lh.acquire('a');
      const forced = await lh.forceAcquire('a');
      assertEnded(mutex, 'mutex, then forceAcquire');
      await forced.release();
      const multi = await lh.multiLock(['a', 'b']).acquire();
      const again = await lh.forceAcquire('a');
      assertEnded(multi, 'multiLock, then forceAcquire');
      assert.ok(again.fencingToken > multi.fencingTokens.get('a')!);
      await again.release();
    } finally {
      await lh.close();
    }
  });

  test('a multiLock granted over a name whose mutex lease vanished unheard ends that lease', async () => {
    const { lh, prefix } = await deaf();
    try {
      const mutex = await lh.acquire('a');
      await command(server.port, ['DEL', lockKey(prefix, 'a')]);
      assert.equal(mutex.lost, false, 'polling: not heard of yet');
      const multi = await lh.multiLock(['a', 'b']).tryAcquire();
      assert.ok(multi !== undefined);
      assertEnded(mutex, 'mutex, then multiLock');
      await multi.release();
    } finally {
      await lh.close();
    }
  });

  test("a mutex or multiLock granted over a multiLock's vanished name ends the multiLock", async () => {
    const { lh, prefix } = await deaf();
    try {
      const first = await lh.multiLock(['a', 'b']).acquire();
      await command(server.port, ['DEL', lockKey(prefix, 'b')]);
      const second = await lh.multiLock(['b', 'c']).tryAcquire();
      assert.ok(second !== undefined);
      assertEnded(first, 'multiLock, then an overlapping multiLock');
      await second.release();
      const third = await lh.multiLock(['d', 'e']).acquire();
      await command(server.port, ['DEL', lockKey(prefix, 'e')]);
      const mutex = await lh.tryAcquire('e');
      assert.ok(mutex !== undefined);
      assertEnded(third, 'multiLock, then a mutex');
      await mutex.release();
    } finally {
      await lh.close();
    }
  });

  test('read-write lock: a write ends vanished readers, a read ends a vanished writer', async () => {
    const { lh, prefix } = await deaf();
    try {
      const rw = lh.readWriteLock('cfg');
      const reader = await rw.read();
      await command(server.port, ['DEL', `${lockKey(prefix, 'cfg')}:rw:readers`]);
      const writer = await rw.tryWrite();
      assert.ok(writer !== undefined);
      assertEnded(reader, 'read, then write');
      await command(server.port, ['DEL', `${lockKey(prefix, 'cfg')}:rw:writer`]);
      const next = await rw.tryRead();
      assert.ok(next !== undefined);
      assertEnded(writer, 'write, then read');
      await next.release();
    } finally {
      await lh.close();
    }
  });

  test('fair lock and election: a new grant ends the lease whose key vanished', async () => {
    const { lh, prefix } = await deaf();
    try {
      const turn = await lh.fairLock('payouts').acquire();
      await command(server.port, ['DEL', `${lockKey(prefix, 'payouts')}:fair`]);
      const next = await lh.fairLock('payouts').acquire({ timeout: 0 });
      assertEnded(turn, 'fair lock');
      await next.release();
      const term = await lh.election('boss').campaign('a');
      await command(server.port, ['DEL', `${lockKey(prefix, 'boss')}:election`]);
      const newer = await lh.election('boss').campaign('b', { timeout: 0 });
      assertEnded(term, 'election');
      await newer.resign();
    } finally {
      await lh.close();
    }
  });

  test("semaphore permits share their key: a new permit ends none of this process's others", async () => {
    const lh = await connect(server, { ttl: 30_000 });
    try {
      const semaphore = lh.semaphore('uploads', { limit: 3 });
      const one = await semaphore.acquire();
      const two = await semaphore.acquire();
      const three = await semaphore.acquire();
      assert.deepEqual([one.lost, two.lost, three.lost], [false, false, false]);
      await Promise.all([one.release(), two.release(), three.release()]);
    } finally {
      await lh.close();
    }
  });
});
