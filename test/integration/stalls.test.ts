// A Redis that stalls (SIGSTOP: a long fork, a swapping host) or a network that drops packets while
// the TCP connection stays open: every call settles within `commandTimeout`, a give-back Redis did
// not confirm is sent again once it answers, and a healed network frees the names at once instead
// of after their TTL (issue 22, items 1 and 2).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type Leasehold,
  type LeaseholdEvents,
  LockTimeoutError,
  RedisUnavailableError,
} from '../../src/index.ts';
import { connect, lockKey, mode, uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

/** commandTimeout of these tests: how long a call may wait for a reply. */
const LIMIT = 300;
/** Timers and a loaded CI machine, on top of LIMIT: far below every stall here (seconds). */
const SLACK = 1_500;
/** A TTL the names must not have to wait out: the point is that they are free long before. */
const LONG_TTL = 20_000;

/** The 'pending-releases' changes `lh` emits, in order. */
function pendingChanges(lh: Leasehold): LeaseholdEvents['pending-releases']['change'][] {
  const changes: LeaseholdEvents['pending-releases']['change'][] = [];
  lh.on('pending-releases', ({ change }) => changes.push(change));
  return changes;
}

/** Settles `promise` within LIMIT + SLACK, with its error (or undefined when it resolved). */
async function settled(promise: Promise<unknown>, what: string): Promise<unknown> {
  return within(
    promise.then(
      () => undefined,
      (error: unknown) => error,
    ),
    LIMIT + SLACK,
    what,
  );
}

describe(`a stalled or black-holed Redis (${mode})`, { timeout: 60_000 }, () => {
  test('SIGSTOP: every call settles within commandTimeout, and the instance works again after SIGCONT', async () => {
    const server = await RedisServer.start();
    const prefix = uniquePrefix('stall');
    const lh = await connect(server, { prefix, ttl: 2_000, commandTimeout: LIMIT });
    try {
      const held = await lh.acquire('held');
      const semaphore = lh.semaphore('sem', { limit: 2 });
      server.signal('SIGSTOP');
      const calls: [string, Promise<unknown>][] = [
        ['tryAcquire', lh.tryAcquire('other')],
        ['forceAcquire', lh.forceAcquire('forced')],
        ['inspect', lh.inspect('held')],
        ['list', lh.list()],
        ['semaphore tryAcquire', semaphore.tryAcquire()],
        ['readWriteLock tryWrite', lh.readWriteLock('rw').tryWrite()],
        ['election leader', lh.election('e').leader()],
        ['multiLock tryAcquire', lh.multiLock(['m1', 'm2']).tryAcquire()],
      ];
      // The lease is lost with its connection (onDisconnect: 'abort'), which extend() reports.
      const extended = settled(held.extend(), 'extend');
      const errors = await Promise.all(calls.map(([what, call]) => settled(call, what)));
      assert.equal(((await extended) as Error)?.name, 'LockLostError');
      for (const [i, error] of errors.entries()) {
        assert.ok(
          error instanceof RedisUnavailableError,
          `${calls[i]![0]}: expected RedisUnavailableError, got ${String(error)}`,
        );
      }
      // A waiting acquire keeps retrying until its own timeout, then says Redis was unreachable.
      const waited = await settled(lh.acquire('waiting', { timeout: 500 }), 'acquire');
      assert.ok(waited instanceof LockTimeoutError, String(waited));
      assert.match(waited.message, /unreachable/);
      assert.equal(
        held.lost,
        true,
        'the lease behind the abandoned connection is lost (onDisconnect: abort)',
      );
      server.signal('SIGCONT');
      const again = await lh.acquire('after', { timeout: 5_000 });
      assert.ok(again.fencingToken > 0n);
      await again.release();
    } finally {
      server.signal('SIGCONT');
      await within(lh.close(), LIMIT + 4_000, 'close');
      await server.stop();
    }
  });

  test('SIGSTOP: close() settles within its bound while Redis does not answer', async () => {
    const server = await RedisServer.start();
    const lh = await connect(server, { ttl: 2_000, commandTimeout: LIMIT });
    try {
      await lh.acquire('held');
      const waiting = lh.acquire('held', { timeout: 60_000 }).catch((error: unknown) => error);
      server.signal('SIGSTOP');
      const inFlight = lh.tryAcquire('in-flight').catch((error: unknown) => error);
      await within(lh.close(), LIMIT + 4_000, 'close');
      assert.equal(((await waiting) as Error).name, 'ConnectionClosedError');
      assert.ok((await inFlight) instanceof Error);
    } finally {
      server.signal('SIGCONT');
      await server.stop();
    }
  });

  test('a release Redis did not confirm is queued and frees the name as soon as Redis answers', async () => {
    const server = await RedisServer.start();
    const prefix = uniquePrefix('giveback');
    // 'reverify': the lease survives the abandoned connection, so release() itself goes unconfirmed.
    const lh = await connect(server, {
      prefix,
      ttl: LONG_TTL,
      commandTimeout: LIMIT,
      onDisconnect: 'reverify',
    });
    const changes = pendingChanges(lh);
    let other: Leasehold | undefined;
    try {
      const lease = await lh.acquire('x');
      server.signal('SIGSTOP');
      const error = await settled(lease.release(), 'release');
      assert.ok(error instanceof RedisUnavailableError, String(error));
      assert.equal(lease.signal.aborted, true, 'the lease ends locally all the same');
      assert.equal(lh.stats.pendingReleases, 1);
      assert.deepEqual(changes, ['queued']);
      server.signal('SIGCONT');
      // Free long before its TTL: the give-back ran once a connection worked again.
      other = await connect(server, { prefix, ttl: 1_000 });
      const next = await other.acquire('x', { timeout: 5_000 });
      await next.release();
      await until('the queue to empty', async () => lh.stats.pendingReleases === 0, { timeout: 5_000 });
      assert.deepEqual(changes, ['queued', 'released']);
    } finally {
      server.signal('SIGCONT');
      await other?.close();
      await lh.close();
      await server.stop();
    }
  });

  test('an acquisition whose reply never came is given back once Redis answers', async () => {
    const server = await RedisServer.start();
    const prefix = uniquePrefix('unanswered');
    const lh = await connect(server, { prefix, ttl: LONG_TTL, commandTimeout: LIMIT });
    let other: Leasehold | undefined;
    try {
      await lh.tryAcquire('warm').then((lease) => lease?.release());
      server.signal('SIGSTOP');
      // The script is in the stopped server's socket buffer: it may still run when it wakes up.
      const error = await settled(lh.tryAcquire('y'), 'tryAcquire');
      assert.ok(error instanceof RedisUnavailableError, String(error));
      assert.equal(lh.stats.pendingReleases, 1);
      server.signal('SIGCONT');
      await until('the give-back to be confirmed', async () => lh.stats.pendingReleases === 0, {
        timeout: 5_000,
      });
      assert.equal(await command(server.port, ['EXISTS', lockKey(prefix, 'y')]), 0);
      other = await connect(server, { prefix, ttl: 1_000 });
      const lease = await other.tryAcquire('y');
      assert.ok(lease !== undefined, 'the name is free, not held for its TTL by a lost reply');
      await lease.release();
    } finally {
      server.signal('SIGCONT');
      await other?.close();
      await lh.close();
      await server.stop();
    }
  });

  test('a network that drops packets, then heals: calls settle, and the name is free at once', async () => {
    const server = await RedisServer.start();
    const proxy = await FaultProxy.start(server.port);
    const prefix = uniquePrefix('blackhole');
    const lh = await connect(server, {
      url: proxy.url,
      prefix,
      ttl: LONG_TTL,
      commandTimeout: LIMIT,
      onDisconnect: 'reverify',
    });
    const direct = await connect(server, { prefix, ttl: 1_000 });
    try {
      const lease = await lh.acquire('z');
      proxy.blackhole(true);
      const error = await settled(lease.release(), 'release');
      assert.ok(error instanceof RedisUnavailableError, String(error));
      assert.equal(await direct.tryAcquire('z'), undefined, 'still held: the release never arrived');
      assert.equal(lh.stats.pendingReleases, 1);
      proxy.blackhole(false);
      const next = await direct.acquire('z', { timeout: 5_000 });
      await next.release();
      await until('the queue to empty', async () => lh.stats.pendingReleases === 0, { timeout: 5_000 });
    } finally {
      proxy.blackhole(false);
      await direct.close();
      await lh.close();
      await proxy.stop();
      await server.stop();
    }
  });
});
