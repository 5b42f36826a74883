import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConnectOptions, Leasehold, LockLostError, QuorumError } from '../../src/index.ts';
import { scriptSource } from '../../src/scripts/index.ts';
import {
  aborted,
  lockKey,
  mode,
  testDriver,
  testNotifications,
  tracking,
  uniquePrefix,
  within,
} from '../harness/leasehold.ts';
import { type Masters, startMasters } from '../harness/masters.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

let masters: Masters;
const open: Leasehold[] = [];

before(async () => {
  masters = await startMasters(3);
});
after(async () => {
  await Promise.all(open.map((lh) => lh.close()));
  await masters.stopAll();
});
// Tests kill, pause and restart nodes: bring every node back to life before the next test.
beforeEach(async () => {
  for (const server of masters.servers) {
    server.signal('SIGCONT');
    if (server.pid === undefined || !(await alive(server.port))) await server.restart();
  }
});

async function alive(port: number): Promise<boolean> {
  try {
    return (await command(port, ['PING'], 500)) === 'PONG';
  } catch {
    return false;
  }
}

async function quorum(prefix: string, options: ConnectOptions = {}): Promise<Leasehold> {
  const lh = await Leasehold.connect({
    nodes: [...masters.urls],
    prefix,
    driver: testDriver,
    notifications: testNotifications,
    ...(tracking ? {} : { retryDelay: 20 }),
    ttl: 1_000,
    ...options,
  });
  open.push(lh);
  return lh;
}

/** The lock key's value on each node (null: none; an Error: the node did not answer). */
async function values(prefix: string, name: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const server of masters.servers)
    out.push(await command(server.port, ['GET', lockKey(prefix, name)]).catch((error: unknown) => error));
  return out;
}

/** Which nodes hold the lock key with this token. */
async function holders(prefix: string, name: string, token: string): Promise<number[]> {
  return (await values(prefix, name)).flatMap((value, i) => (value === token ? [i] : []));
}

describe(`quorum mode over 3 masters (${mode})`, () => {
  test('acquire writes a majority, release removes every key, waiters wake on a release', async () => {
    const prefix = uniquePrefix('q');
    const a = await quorum(prefix);
    const b = await quorum(prefix);
    const lease = await a.acquire('basic');
    // acquire() too settles at a majority: the third node's write may still be on its way.
    await until(
      'the key on every node',
      async () => ((await holders(prefix, 'basic', lease.stored)).length === 3 ? true : undefined),
      { timeout: 2_000 },
    );
    const waiting = b.acquire('basic', { timeout: 5_000 });
    await sleep(30);
    assert.equal(await lease.release(), true);
    const next = await within(waiting, tracking ? 500 : 1_000, 'waiter acquires after the release');
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
    // release() settles once a majority confirmed; the third node's delete may still be on its
    // way (a CI rehearsal read it there once, GLIDE): every node is empty soon after, not at once.
    await until(
      'every node without the key',
      async () => ((await holders(prefix, 'basic', next.stored)).length === 0 ? true : undefined),
      { timeout: 2_000 },
    );
  });

  test('with one node killed, acquire, extend and release still work', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix, { ttl: 300 });
    await masters.servers[2]!.kill();
    const lease = await lh.acquire('one-down', { timeout: 2_000 });
    await sleep(700);
    assert.equal(lease.lost, false, 'extension kept it alive past two TTLs');
    await lease.extend();
    assert.equal(await lease.release(), true);
    assert.deepEqual(await holders(prefix, 'one-down', lease.stored), []);
  });

  test('with two nodes killed, acquire fails with QuorumError within its timeout and leaves no key', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix);
    await Promise.all([masters.servers[1]!.kill(), masters.servers[2]!.kill()]);
    const started = performance.now();
    const error = await lh.acquire('two-down', { timeout: 500 }).catch((e: unknown) => e);
    const waited = performance.now() - started;
    assert.ok(error instanceof QuorumError, `got ${String(error)}`);
    assert.equal(error.code, 'LEASEHOLD_ERR_QUORUM');
    assert.ok(waited < 2_000, `failed within its timeout (${waited.toFixed(0)} ms)`);
    await assert.rejects(lh.tryAcquire('two-down'), QuorumError);
    // The waiting acquire's timeout can fire while its last attempt is still in flight; that
    // attempt cleans up after itself a round trip later.
    await until(
      'no key left on the live node',
      async () => (await command(masters.servers[0]!.port, ['EXISTS', lockKey(prefix, 'two-down')])) === 0,
      { timeout: 1_000, interval: 10 },
    );
  });

  test('a SIGSTOPped node does not stall acquire, extend or release', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix, { ttl: 400 });
    masters.servers[1]!.signal('SIGSTOP');
    try {
      const started = performance.now();
      const lease = await lh.acquire('stopped', { timeout: 1_000 });
      assert.ok(performance.now() - started < 1_000);
      await sleep(900);
      assert.equal(lease.lost, false);
      const releaseStarted = performance.now();
      assert.equal(await lease.release(), true);
      assert.ok(performance.now() - releaseStarted < 400, 'release decided without the paused node');
    } finally {
      masters.servers[1]!.signal('SIGCONT');
    }
  });

  test('a partial acquire (one node of three) is cleaned up', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix);
    // Someone else holds the lock on two nodes: our attempt can win only node 0.
    for (const i of [1, 2]) {
      await command(masters.servers[i]!.port, ['SET', lockKey(prefix, 'partial'), 'other', 'PX', '5000']);
    }
    // The premise needs all three nodes answering: a node still reconnecting after the previous
    // test's restart makes this a QuorumError (seen once in CI, polling mode). Wait for them.
    const attempt = await until(
      'all three nodes to answer',
      () =>
        lh.tryAcquire('partial').then(
          (lease) => ({ lease }),
          (error: unknown) => {
            if (error instanceof QuorumError) return undefined;
            throw error;
          },
        ),
      { timeout: 5_000 },
    );
    assert.equal(attempt.lease, undefined);
    await sleep(50);
    assert.equal(await command(masters.servers[0]!.port, ['EXISTS', lockKey(prefix, 'partial')]), 0);
  });

  test('deleting a minority of keys keeps the lease and puts the key back; a majority taken over aborts it', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix, { ttl: tracking ? 6_000 : 900 });
    // The premise needs the lease on all three nodes: a node still reconnecting after the
    // previous test's restart would make one DEL a majority. Each try takes a new name: an
    // acquire that reaches a slow node after the try's release there leaves a stale key for the
    // TTL (6 s, longer than this wait), as any Redlock attempt may on a minority; that failed a CI
    // rehearsal once with one name ("condition never held" for 5 s).
    const tries: string[] = [];
    const { lease, name } = await until(
      'a lease on all three nodes',
      async () => {
        const tryName = `majority-${tries.length}`;
        const candidate = await lh.acquire(tryName);
        const found = await values(prefix, tryName);
        if (found.every((value) => value === candidate.stored)) return { lease: candidate, name: tryName };
        const shown = found.map((value) => (value === candidate.stored ? 'ours' : String(value)));
        tries.push(`${tryName}: [${shown.join(' | ')}]`);
        await candidate.release();
        return undefined;
      },
      { timeout: 5_000 },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; tries: ${tries.join(', ')}`);
    });
    await command(masters.servers[0]!.port, ['DEL', lockKey(prefix, name)]);
    // The holder re-verifies (on the push, or polling at its next extension) and restores it.
    // Its count of under-replicated leases changes when the restore's reply is read, after the
    // restored key is visible to this test's own connection: both are waited for (a CI
    // rehearsal read the count in between, once).
    await until(
      'the deleted key is back with the holder, and the holder knows it',
      async () =>
        (await holders(prefix, name, lease.stored)).length === 3 && lh.stats.underReplicated === 0
          ? true
          : undefined,
      { timeout: 3_000 },
    );
    assert.equal(lease.lost, false, 'a minority lost is tolerated');
    // Two DELs on independent masters are never one event: a re-verification that lands between
    // them finds a majority still held and rightly puts the first key back (it failed CI once that
    // way). Another owner's value on a majority cannot be put back (SET NX): the lease must end.
    await Promise.all(
      [0, 1].map((i) =>
        command(masters.servers[i]!.port, ['SET', lockKey(prefix, name), 'someone-else', 'PX', '10000']),
      ),
    );
    const reason = await within(
      aborted(lease.signal),
      tracking ? 1_000 : 2_000,
      'holder notices the majority',
    );
    assert.ok(reason instanceof LockLostError);
  });

  test("a restore that finds the lease's own key (another extension of it put it back first) counts the node as holding it", async () => {
    const port = masters.servers[0]!.port;
    const lock = lockKey(uniquePrefix('q'), 'restore');
    const restore = (stored: string) =>
      command(port, [
        'EVAL',
        scriptSource('quorum-restore'),
        3,
        lock,
        `${lock}:fence`,
        `${lock}:mark`,
        stored,
        60_000,
        5,
      ]);
    assert.equal(await restore('ours'), 1, 'missing: put back');
    assert.equal(await restore('ours'), 1, 'already ours: held');
    assert.equal(await restore('theirs'), 0, "another owner's key: left alone");
    assert.equal(await command(port, ['GET', lock]), 'ours');
  });

  test('a lease lost on a majority gives back the copy a minority still holds', async () => {
    const prefix = uniquePrefix('q');
    // One ttl for both modes: polling hears of the loss at the next extension (2 s), well before
    // the copy's own expiry (the extension that found the loss renewed it to 6 s on node 0).
    const lh = await quorum(prefix, { ttl: 6_000 });
    const lease = await until(
      'a lease on all three nodes',
      async () => {
        const candidate = await lh.acquire('minority-left');
        if ((await holders(prefix, 'minority-left', candidate.stored)).length === 3) return candidate;
        await candidate.release();
        return undefined;
      },
      { timeout: 5_000 },
    );
    // Taken over on nodes 1 and 2, not deleted: a re-verification between two DELs would rightly
    // put the first key back, and the lease would be held again.
    await Promise.all(
      [1, 2].map((i) =>
        command(masters.servers[i]!.port, [
          'SET',
          lockKey(prefix, 'minority-left'),
          'someone-else',
          'PX',
          10_000,
        ]),
      ),
    );
    const reason = await within(
      aborted(lease.signal),
      tracking ? 1_000 : 3_000,
      'holder notices the majority',
    );
    assert.ok(reason instanceof LockLostError);
    // The copy on node 0 is this lease's token: given back, not left to block that node for 6 s.
    await until(
      'no node holds the lost lease',
      async () => ((await holders(prefix, 'minority-left', lease.stored)).length === 0 ? true : undefined),
      { timeout: 1_000 },
    );
  });

  // Without restoring missing keys on extension, the second restart leaves the lease on one node:
  // its next extension finds a majority gone, and the contender's tryAcquire gets in.
  test('rolling restarts, one master at a time and a TTL apart: the lease survives and nobody else gets in', async () => {
    const prefix = uniquePrefix('q');
    const ttl = 600;
    const a = await quorum(prefix, { ttl });
    const b = await quorum(prefix, { ttl });
    const lease = await until(
      'a lease on all three nodes',
      async () => {
        const candidate = await a.acquire('rolling');
        if ((await holders(prefix, 'rolling', candidate.stored)).length === 3) return candidate;
        await candidate.release();
        return undefined;
      },
      { timeout: 5_000 },
    );
    for (const server of masters.servers) {
      await server.restart();
      // More than a TTL passes before the next restart; the contender keeps trying meanwhile.
      const deadline = performance.now() + ttl * 1.5;
      while (performance.now() < deadline) {
        const stolen = await b.tryAcquire('rolling').catch(() => undefined);
        assert.equal(stolen, undefined, 'the contender never gets the lock');
        await sleep(50);
      }
      assert.equal(lease.lost, false, `still held after restarting :${server.port}`);
    }
    await until(
      'the lease is back on all three nodes',
      async () => ((await holders(prefix, 'rolling', lease.stored)).length === 3 ? true : undefined),
      { timeout: 3_000 },
    );
    assert.equal(await lease.release(), true);
  });

  test('fencing tokens keep increasing when a minority of nodes restarts empty', async () => {
    const prefix = uniquePrefix('q');
    const lh = await quorum(prefix);
    let last = 0n;
    for (let round = 0; round < 6; round++) {
      const lease = await lh.acquire('fence', { timeout: 5_000 });
      assert.ok(lease.fencingToken > last, `round ${round}: ${lease.fencingToken} > ${last}`);
      last = lease.fencingToken;
      await lease.release();
      // Restart one node empty: its counter starts from zero again.
      await masters.servers[round % 3]!.restart();
      if (round % 2 === 0) {
        // Advance another node's counter alone, as a holder whose majority failed would.
        await command(masters.servers[(round + 1) % 3]!.port, [
          'INCRBY',
          `${lockKey(prefix, 'fence')}:fence`,
          '5',
        ]);
      }
    }
  });

  test('8 processes x 15 critical sections over the quorum: no overlap, tokens in entry order', {
    skip: tracking
      ? false
      : 'polling is covered by mutex-processes; 8 processes polling 3 nodes every 5 ms saturate a 2-core box',
  }, async () => {
    const prefix = uniquePrefix('qp');
    const file = new URL('./workers/mutex-worker.ts', import.meta.url).pathname;
    const workers = await Promise.all(
      Array.from({ length: 8 }, () =>
        Worker.start(file, { args: [masters.urls.join(','), prefix, 'shared', '15'] }),
      ),
    );
    try {
      await Promise.all(workers.map((w) => w.next((m) => m['type'] === 'ready', 30_000)));
      for (const w of workers) w.send({ type: 'go' });
      const done = await Promise.all(workers.map((w) => w.next((m) => m['type'] === 'done', 120_000)));
      assert.deepEqual(
        done.map((m) => m['overlaps']),
        workers.map(() => 0),
      );
      const log = (await command(masters.servers[0]!.port, [
        'LRANGE',
        `${prefix}:check:log`,
        '0',
        '-1',
      ])) as string[];
      assert.equal(log.length, 120);
      const tokens = log.map((entry) => BigInt(entry.split(' ')[0]!));
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `entry ${i}`);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});
