// No key lives forever (issue 22, item 3; DESIGN.md principle 12): after every primitive's whole
// lifecycle (acquire and release, waiters, waiters that give up, a takeover, an election with an
// observer, a fair lock's queue, a multiLock, a quorum restoring a node), every key left under
// the test's prefix has a TTL, and none longer than the idle time (IDLE_MS, src/scripts/includes/
// idle.lua) plus the leases' own TTLs. On one Redis with this run's driver, on the memory backend,
// and on a quorum of three masters. Until this test, fencing, arrival and release counters and the
// election's change log had no TTL: 5,000 names used once left 5,000 keys for good. The one
// exception, fence marks (src/base/fence-mark.ts), are one per slot the names used, not per name.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fenceMark, isFenceMark } from '../../src/base/fence-mark.ts';
import { Leasehold, LockLostError, LockTimeoutError, MemoryBackend } from '../../src/index.ts';
import { scriptSource } from '../../src/scripts/index.ts';
import {
  lockKey,
  mode,
  testDriver,
  testNotifications,
  uniquePrefix,
  useRedis,
} from '../harness/leasehold.ts';
import { type Masters, startMasters } from '../harness/masters.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();

/** The idle time the scripts run with (the one line of includes/idle.lua). */
const IDLE_MS = Number(/^local IDLE_MS = (\d+)$/m.exec(scriptSource('acquire'))?.[1]);
const TTL = 2_000;
/** The longest any key may live: the idle time past a lease's end, a fair queue's 2 ttl, slack. */
const LONGEST = IDLE_MS + 2 * TTL + 1_000;

/** Every key under `prefix` with its PTTL, from one node (SCAN, then PTTL each). */
async function keysOn(port: number, prefix: string): Promise<[string, number][]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = (await command(port, ['SCAN', cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000])) as [
      string,
      string[],
    ];
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return Promise.all(keys.map(async (key) => [key, (await command(port, ['PTTL', key])) as number] as const));
}

/**
 * Asserts that every key has a TTL no longer than LONGEST, and that the lifecycle left some; but
 * fence marks, which have none: each the mark of a fencing or arrival counter's slot still there.
 */
function allExpire(keys: [string, number][], where: string, prefix: string): void {
  assert.ok(keys.length > 0, `${where}: the lifecycle left no key at all (nothing was checked)`);
  const marks = keys.filter(([key]) => isFenceMark(key)).map(([key]) => key);
  const counters = keys.filter(([key]) => /:(fence|arrivals)$/.test(key));
  const slots = new Set(counters.map(([key]) => fenceMark(prefix, key)));
  assert.ok(marks.length > 0, `${where}: no fence mark`);
  assert.deepEqual(
    marks.filter((mark) => !slots.has(mark)),
    [],
    `${where}: fence marks of no counter's slot`,
  );
  const forever = keys.filter(([key, pttl]) => !isFenceMark(key) && (pttl <= 0 || pttl > LONGEST));
  assert.deepEqual(forever, [], `${where}: keys without a TTL (-1) or with one above ${LONGEST} ms`);
}

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  await until(what, async () => (await check()) || undefined, { timeout: 5_000, interval: 10 });
}

/** A mutex with a waiter, a waiter that gives up, an extension, a takeover; and a multiLock. */
async function mutexLifecycle(lh: Leasehold): Promise<void> {
  const first = await lh.acquire('m');
  const waiter = lh.acquire('m', { timeout: 5_000 });
  // Should an assertion below fail first, close() rejects this wait: report that assertion, not
  // an unhandled rejection of the wait.
  waiter.catch(() => {});
  assert.ok((await lh.acquire('m', { timeout: 50 }).catch((e: unknown) => e)) instanceof LockTimeoutError);
  await first.extend();
  await first.release();
  const second = await waiter;
  const forced = await lh.forceAcquire('m');
  assert.ok(second.signal.reason instanceof LockLostError);
  await forced.release();
  assert.equal(await second.release(), false);
  assert.equal(await lh.withLock('job:1', async () => 'done'), 'done');
  // A busy multi-acquire writes nothing: only the granted one matters here.
  await (await lh.multiLock(['x', 'y', 'm']).acquire()).release();
}

/** Every other primitive: semaphore, read-write lock, fair lock, election with an observer. */
async function primitivesLifecycle(lh: Leasehold): Promise<void> {
  const sem = lh.semaphore('s', { limit: 1 });
  const permit = await sem.acquire();
  const next = sem.acquire({ timeout: 5_000 });
  assert.ok((await sem.acquire({ timeout: 50 }).catch((e: unknown) => e)) instanceof LockTimeoutError);
  await permit.release();
  await (await next).release();

  const rw = lh.readWriteLock('rw');
  const reader = await rw.read();
  // A writer that registers as waiting, then gives up (withdraws); then one that gets in.
  assert.ok((await rw.write({ timeout: 100 }).catch((e: unknown) => e)) instanceof LockTimeoutError);
  const writer = rw.write({ timeout: 5_000 });
  await waitFor('a registered writer', async () => ((await lh.inspect('rw'))?.waiters?.length ?? 0) > 0);
  assert.equal(await rw.tryRead(), undefined);
  await reader.release();
  await (await writer).release();
  await (await rw.read()).release();

  const fair = lh.fairLock('f');
  const holder = await fair.acquire();
  const first = fair.acquire({ timeout: 5_000 });
  await waitFor('one queued', async () => (await lh.inspect('f'))?.queued === 1);
  const ac = new AbortController();
  const quitter = fair.acquire({ signal: ac.signal }).catch((e: unknown) => e);
  await waitFor('two queued', async () => (await lh.inspect('f'))?.queued === 2);
  ac.abort();
  await quitter;
  await holder.release();
  await (await first).release();

  const election = lh.election('e');
  const stop = new AbortController();
  const seen: string[] = [];
  const observer = (async () => {
    for await (const change of election.observe({ signal: stop.signal })) seen.push(change.type);
  })().catch(() => undefined);
  const term = await election.campaign('a');
  const candidate = election.campaign('b', { timeout: 5_000 });
  await term.proclaim('a2');
  await term.extend();
  await term.resign();
  const second = await candidate;
  await second.resign();
  await waitFor(
    'the observer saw both terms end',
    async () => seen.filter((t) => t === 'vacant').length >= 2,
  );
  stop.abort();
  await observer;
}

describe(`every key expires when its name goes idle (${mode})`, () => {
  test('one Redis: every primitive', async () => {
    const prefix = uniquePrefix('keys');
    const lh = await redis.instance(prefix, TTL);
    await mutexLifecycle(lh);
    await primitivesLifecycle(lh);
    allExpire(await keysOn(redis.server.port, prefix), redis.server.url, prefix);
  });

  test('the memory backend: every primitive', async () => {
    const backend = new MemoryBackend();
    const prefix = uniquePrefix('keys');
    const lh = await Leasehold.connect({ backend, ttl: TTL, prefix });
    try {
      await mutexLifecycle(lh);
      await primitivesLifecycle(lh);
    } finally {
      await lh.close();
    }
    allExpire(
      backend.keys().map((key) => [key, backend.pttl(key)]),
      'memory',
      prefix,
    );
  });

  describe('a quorum of three masters', () => {
    let masters: Masters;
    before(async () => {
      masters = await startMasters(3);
    });
    after(async () => {
      await masters?.stopAll();
    });

    test('mutex, multiLock, and a node restored after it lost its keys', async () => {
      const prefix = uniquePrefix('keysq');
      const lh = await Leasehold.connect({
        nodes: [...masters.urls],
        driver: testDriver,
        notifications: testNotifications,
        prefix,
        ttl: TTL,
      });
      try {
        await mutexLifecycle(lh);
        // A node that restarted empty: the next extension round puts the lease and a raised
        // counter back on it (quorum-restore.lua).
        const lease = await lh.acquire('restored');
        const [node] = masters.servers;
        await command(node!.port, [
          'DEL',
          lockKey(prefix, 'restored'),
          `${lockKey(prefix, 'restored')}:fence`,
        ]);
        await lease.extend();
        await waitFor(
          'the key restored',
          async () => (await command(node!.port, ['EXISTS', lockKey(prefix, 'restored')])) === 1,
        );
        assert.ok(
          ((await command(node!.port, ['PTTL', `${lockKey(prefix, 'restored')}:fence`])) as number) > 0,
        );
        await lease.release();
      } finally {
        await lh.close();
      }
      for (const server of masters.servers) allExpire(await keysOn(server.port, prefix), server.url, prefix);
    });
  });
});
