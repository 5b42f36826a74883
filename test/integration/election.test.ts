import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionClosedError,
  type LeadershipChange,
  type Leasehold,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
} from '../../src/index.ts';
import {
  aborted,
  assertIdle,
  connect,
  counts,
  mode,
  tracking,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

const WORKER = new URL('./workers/primitives-worker.ts', import.meta.url).pathname;

const redis = useRedis();
const { instance } = redis;

/** Collects what `observe()` yields until `signal` aborts. */
function collect(
  lh: Leasehold,
  name: string,
  signal: AbortSignal,
): { seen: LeadershipChange[]; done: Promise<unknown> } {
  const seen: LeadershipChange[] = [];
  const done = (async () => {
    for await (const change of lh.election(name).observe({ signal })) seen.push(change);
  })().catch((error: unknown) => error);
  return { seen, done };
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe(`election (${mode})`, () => {
  test('5 processes, leaders killed and resigning: one leader at a time, observers see every term', async () => {
    const prefix = uniquePrefix('el');
    const observerA = await instance(prefix);
    const observerB = await instance(prefix);
    const controller = new AbortController();
    const a = collect(observerA, 'boss', controller.signal);
    const b = collect(observerB, 'boss', controller.signal);
    await sleep(50);
    const procs = await Promise.all(
      Array.from({ length: 5 }, () => Worker.start(WORKER, { args: [redis.server.url, prefix, '600'] })),
    );
    const terms: bigint[] = [];
    let kills = 0;
    try {
      await Promise.all(procs.map((w) => w.next((m) => m['type'] === 'ready', 20_000)));
      for (const w of procs) w.send({ type: 'campaign', name: 'boss', iterations: 3, hold: 150 });
      // One pump per worker into one ordered inbox (a race of next() calls would drop messages).
      const inbox: { w: Worker; m: Record<string, unknown> }[] = [];
      let arrived: (() => void) | undefined;
      for (const w of procs) {
        void (async () => {
          for (;;) {
            const m = await w.next(() => true, 20_000).catch(() => undefined);
            if (m === undefined) return;
            inbox.push({ w, m });
            arrived?.();
            if (m['type'] !== 'elected') return;
          }
        })();
      }
      const alive = new Set(procs);
      // Follow the terms; kill the leader of every fourth term (it never resigns: its TTL must lapse).
      while (alive.size > 0) {
        if (inbox.length === 0) {
          await within(
            new Promise<void>((resolve) => {
              arrived = resolve;
            }),
            20_000,
            'next election message',
          );
          continue;
        }
        const { w, m } = inbox.shift()!;
        if (!alive.has(w)) continue;
        if (m['type'] === 'error') assert.fail(String(m['message']));
        assert.equal(m['bad'], 0, 'never two leaders at once');
        if (m['type'] === 'done') {
          alive.delete(w);
          continue;
        }
        terms.push(BigInt(String(m['fence'])));
        if (terms.length % 4 === 0 && kills < 2) {
          kills += 1;
          alive.delete(w);
          await w.kill();
          // The killed leader was inside; take it out of the independent count for it.
          await command(redis.server.port, ['DECR', `${prefix}:check:leaders`]);
        }
      }
    } finally {
      await Promise.all(procs.map((w) => w.stop()));
    }
    assert.equal(kills, 2);
    for (let i = 1; i < terms.length; i++)
      assert.ok(terms[i]! > terms[i - 1]!, 'fencing tokens increase per term');
    await sleep(700); // the last killed leader's TTL, for the final vacancy
    const last = await observerA.election('boss').leader();
    assert.equal(last, undefined);
    // Observers see every term once and in order, each followed by its vacancy.
    const expected = terms.flatMap((fence) => [`elected ${fence}`, `vacant ${fence}`]);
    const describeAll = (seen: LeadershipChange[]) => seen.map((c) => `${c.type} ${c.fencingToken}`);
    await within(
      (async () => {
        while (describeAll(a.seen).length < expected.length || describeAll(b.seen).length < expected.length) {
          await sleep(20);
        }
      })(),
      3_000,
      'observers catch up',
    );
    controller.abort(new Error('enough'));
    assert.match(String(await a.done), /enough/);
    await b.done;
    assert.deepEqual(describeAll(a.seen), expected);
    assert.deepEqual(describeAll(b.seen), expected);
  });

  test('campaign, proclaim, leader(), resign; a waiting candidate takes over at once', async () => {
    const prefix = uniquePrefix('el');
    const a = await instance(prefix, tracking ? 10_000 : 1_000);
    const b = await instance(prefix);
    const controller = new AbortController();
    const watcher = collect(b, 'api', controller.signal);
    const term = await a.election('api').campaign('node-a');
    assert.deepEqual(await b.election('api').leader(), { value: 'node-a', fencingToken: term.fencingToken });
    await term.proclaim('node-a:v2');
    assert.equal((await b.election('api').leader())?.value, 'node-a:v2');
    const next = b.election('api').campaign('node-b', { timeout: 5_000 });
    await sleep(30);
    const started = performance.now();
    assert.equal(await term.resign(), true);
    assert.ok(term.signal.reason instanceof LockReleasedError);
    const second = await within(next, tracking ? 500 : 2_000, 'next candidate elected');
    if (tracking) assert.ok(performance.now() - started < 200);
    assert.ok(second.fencingToken > term.fencingToken);
    await second.resign();
    await within(
      (async () => {
        while (watcher.seen.length < 5) await sleep(10);
      })(),
      2_000,
      'observer sees five changes',
    );
    controller.abort();
    await watcher.done;
    assert.deepEqual(
      watcher.seen.map((c) => [c.type, c.leader?.value]),
      [
        ['elected', 'node-a'],
        ['proclaimed', 'node-a:v2'],
        ['vacant', undefined],
        ['elected', 'node-b'],
        ['vacant', undefined],
      ],
    );
  });

  test('a waiting candidate sends nothing while the term runs: recording it costs no command', {
    skip: tracking ? false : 'in polling mode a candidate asks again on a timer, by design',
  }, async () => {
    const prefix = uniquePrefix('el');
    // The leader extends every 10 s (a third of its TTL): not within this test's window. The
    // candidate's own TTL is short, which would make a registration refreshed every ttl / 3 (as the
    // fair lock's) ask ten times a second.
    const a = await instance(prefix, 30_000);
    const b = await instance(prefix, 300);
    const term = await a.election('quiet').campaign('node-a');
    const evals = async () => {
      const info = String(await command(redis.server.port, ['INFO', 'commandstats']));
      return [...info.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const candidate = b.election('quiet').campaign('node-b', { timeout: 5_000 });
    while (counts(b).waiting === 0 || (await b.inspect('quiet'))?.waiters?.length !== 1) await sleep(5);
    const before = await evals();
    await sleep(1_000);
    const sent = (await evals()) - before;
    // Nothing changed in the window (no extension, no release), so no script ran in it.
    assert.equal(sent, 0, `scripts run while nothing changed: ${sent}`);
    await term.resign();
    const next = await candidate;
    assert.ok(next.fencingToken > term.fencingToken);
    await next.resign();
  });

  // Regression: election-extend.lua wrote the leader key after its last read, which disarmed
  // tracking, so after its first extension a leader never heard of a takeover (every server line).
  test('a leader hears of a deleted term at once, also after automatic extensions', async () => {
    const prefix = uniquePrefix('el');
    const lh = await instance(prefix, 150);
    const term = await lh.election('del').campaign('node-a');
    await sleep(400);
    assert.equal(term.lost, false, 'extended, not lost');
    // Keep the next extension far away: only the invalidation push can be prompt now.
    await term.extend(tracking ? 6_000 : 300);
    await sleep(20);
    await command(redis.server.port, ['DEL', `${prefix}:{del}:election`]);
    const reason = await within(aborted(term.signal), tracking ? 1_000 : 2_000, 'leader notices the DEL');
    assert.ok(reason instanceof LockLostError);
  });

  test('an observer starts with the latest change; a crashed leader is reported vacant after its TTL', async () => {
    const prefix = uniquePrefix('el');
    const a = await instance(prefix, 200);
    const b = await instance(prefix);
    const term = await a.election('ttl').campaign('x');
    const controller = new AbortController();
    const iterator = b.election('ttl').observe({ signal: controller.signal });
    const first = await iterator.next();
    assert.deepEqual(first.value, {
      type: 'elected',
      leader: { value: 'x', fencingToken: term.fencingToken },
      fencingToken: term.fencingToken,
    });
    // Stop extending as a crash would: delete nothing, just let the key lapse.
    await command(redis.server.port, ['PEXPIRE', `${prefix}:{ttl}:election`, '150']);
    term.end(new LockReleasedError('ttl', 'abandoned by the test'));
    const started = performance.now();
    const second = await within(iterator.next(), 1_000, 'vacancy observed');
    assert.equal(second.value?.type, 'vacant');
    assert.ok(performance.now() - started < 500);
    await iterator.return();
    assert.equal(await b.election('ttl').leader(), undefined);
  });

  test('an observer reads a new log whose ids start below the last one it saw (expired, clock gone back)', async () => {
    const prefix = uniquePrefix('el');
    const a = await instance(prefix);
    const b = await instance(prefix);
    const term = await a.election('again').campaign('x');
    const controller = new AbortController();
    const iterator = b.election('again').observe({ signal: controller.signal });
    assert.equal((await iterator.next()).value?.type, 'elected');
    await term.resign();
    assert.equal((await within(iterator.next(), 2_000, 'the vacancy')).value?.type, 'vacant');
    // The log expires IDLE_MS after the vacancy; a server whose wall clock has gone back since
    // starts the next one with ids below the last one the observer saw.
    const key = `${prefix}:{again}:election`;
    await command(redis.server.port, ['DEL', `${key}:log`]);
    await command(redis.server.port, ['HSET', key, 'token', 'y', 'value', 'y', 'fence', '7']);
    await command(redis.server.port, ['PEXPIRE', key, '5000']);
    await command(redis.server.port, [
      'XADD',
      `${key}:log`,
      '1-1',
      'type',
      'elected',
      'fence',
      '7',
      'value',
      'y',
    ]);
    const next = await within(iterator.next(), 2_000, 'the new log read');
    assert.deepEqual(next.value, {
      type: 'elected',
      leader: { value: 'y', fencingToken: 7n },
      fencingToken: 7n,
    });
    await iterator.return();
  });

  test('bad input, timeout and signal', async () => {
    const lh = await instance(uniquePrefix('el'));
    assert.throws(() => lh.election(undefined as never), /"name".*undefined/);
    const election = lh.election('x');
    await assert.rejects(election.campaign(5 as never), /"value".*5/);
    await assert.rejects(election.campaign('a', { ttl: 'long' } as never), /"ttl".*"long"/);
    assert.throws(() => election.observe({ signal: 'no' } as never), /"signal".*"no"/);
    const term = await election.campaign('a');
    await assert.rejects(term.proclaim(null as never), /"value".*null/);
    await assert.rejects(election.campaign('b', { timeout: 40 }), LockTimeoutError);
    await assert.rejects(election.campaign('b', { signal: AbortSignal.abort(new Error('early')) }), /early/);
    await term.resign();
    await assert.rejects(term.proclaim('late'), LockReleasedError);
  });

  test('close() rejects candidates and observers, resigns leaders; nothing leaks', async () => {
    const prefix = uniquePrefix('el');
    const lh = await connect(redis.server, { prefix, ttl: 1_000 });
    const baseline = timers();
    const term = await lh.election('close').campaign('me');
    const controller = new AbortController();
    const candidate = lh
      .election('close')
      .campaign('you', { signal: controller.signal })
      .catch((e: unknown) => e);
    const watcher = collect(lh, 'close', controller.signal);
    await sleep(30);
    await lh.close();
    assert.ok((await candidate) instanceof ConnectionClosedError);
    assert.ok((await watcher.done) instanceof ConnectionClosedError);
    assert.ok((await aborted(term.signal)) instanceof LockReleasedError);
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
    assert.equal(await command(redis.server.port, ['EXISTS', `${prefix}:{close}:election`]), 0);
    await assert.rejects(lh.election('close').leader(), ConnectionClosedError);
    await assertIdle(lh);
    assert.ok(timers() <= baseline, 'no timers left behind');
  });
});
