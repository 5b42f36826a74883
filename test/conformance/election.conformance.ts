import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConnectionClosedError,
  type LeadershipChange,
  type Leasehold,
  LockReleasedError,
  LockTimeoutError,
} from '../../src/index.ts';
import { aborted, within } from '../harness/leasehold.ts';
import { keyOf, type Suite } from './suite.ts';

/** Collects what `observe()` yields until `signal` aborts or the instance closes. */
function collect(lh: Leasehold, name: string, signal: AbortSignal) {
  const seen: LeadershipChange[] = [];
  const done = (async () => {
    for await (const change of lh.election(name).observe({ signal })) seen.push(change);
  })().catch((error: unknown) => error);
  const count = (n: number) =>
    within(
      (async () => {
        while (seen.length < n) await sleep(5);
      })(),
      3_000,
      `${n} changes observed (saw ${seen.length})`,
    );
  return { seen, done, count };
}

const describeAll = (seen: LeadershipChange[]) =>
  seen.map((c) => `${c.type} ${c.fencingToken} ${c.leader?.value ?? '-'}`);

export function electionConformance(suite: Suite): void {
  describe('election', () => {
    test('campaign, leader(), proclaim, resign: observers see every change once, in order', async () => {
      const { lhs } = await suite.instances(10_000, 10_000, 1_000);
      const [a, b, c] = lhs as [Leasehold, Leasehold, Leasehold];
      // A finished term first: the observer starts with its vacancy, so we know when it watches.
      const init = await c.election('api').campaign('init');
      await init.resign();
      const controller = new AbortController();
      const watcher = collect(c, 'api', controller.signal);
      await watcher.count(1);
      assert.equal(await c.election('api').leader(), undefined);
      const term = await a.election('api').campaign('node-a');
      assert.deepEqual(await c.election('api').leader(), {
        value: 'node-a',
        fencingToken: term.fencingToken,
      });
      await term.proclaim('node-a:v2');
      assert.equal((await b.election('api').leader())?.value, 'node-a:v2');
      await assert.rejects(b.election('api').campaign('node-b', { timeout: 0 }), LockTimeoutError);
      const next = b.election('api').campaign('node-b', { timeout: 8_000 });
      await sleep(50);
      const started = performance.now();
      assert.equal(await term.resign(), true);
      assert.ok(term.signal.reason instanceof LockReleasedError);
      await assert.rejects(term.proclaim('late'), LockReleasedError);
      // The candidate's own timer is at the 10 s TTL: only the resignation explains this.
      const second = await within(next, 5_000, 'the next candidate');
      assert.ok(performance.now() - started < 1_000, 'woken by the resignation');
      assert.ok(second.fencingToken > term.fencingToken);
      assert.deepEqual(await c.election('api').leader(), {
        value: 'node-b',
        fencingToken: second.fencingToken,
      });
      await second.resign();
      await watcher.count(6);
      controller.abort(new Error('enough'));
      assert.match(String(await watcher.done), /enough/);
      const [t1, t2] = [term.fencingToken, second.fencingToken];
      assert.deepEqual(describeAll(watcher.seen), [
        `vacant ${init.fencingToken} -`,
        `elected ${t1} node-a`,
        `proclaimed ${t1} node-a:v2`,
        `vacant ${t1} -`,
        `elected ${t2} node-b`,
        `vacant ${t2} -`,
      ]);
    });

    test('one leader at a time among contenders; every term has a larger fencing token', async () => {
      const { lhs } = await suite.instances(1_000, 1_000, 1_000);
      const init = await lhs[0]!.election('boss').campaign('init');
      await init.resign();
      const controller = new AbortController();
      const watcher = collect(lhs[0]!, 'boss', controller.signal);
      await watcher.count(1);
      let leaders = 0;
      let most = 0;
      const terms: bigint[] = [];
      await Promise.all(
        lhs.map(async (lh, i) => {
          for (let k = 0; k < 3; k++) {
            const term = await lh.election('boss').campaign(`node-${i}`, { timeout: 10_000 });
            leaders += 1;
            most = Math.max(most, leaders);
            terms.push(term.fencingToken);
            await sleep(5);
            leaders -= 1;
            await term.resign();
          }
        }),
      );
      assert.equal(most, 1);
      assert.equal(terms.length, 9);
      for (let i = 1; i < terms.length; i++) assert.ok(terms[i]! > terms[i - 1]!, `${terms}`);
      assert.ok(terms[0]! > init.fencingToken);
      await watcher.count(19);
      controller.abort();
      await watcher.done;
      assert.deepEqual(
        watcher.seen.map((c) => `${c.type} ${c.fencingToken}`),
        [`vacant ${init.fencingToken}`, ...terms.flatMap((t) => [`elected ${t}`, `vacant ${t}`])],
      );
    });

    test('an observer starts with the latest change; a leader that stops extending is reported vacant', async () => {
      // The observer looks again when the leader's TTL would run out: keep it short.
      const { prefix, lhs } = await suite.instances(300, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const term = await a.election('ttl').campaign('x');
      const controller = new AbortController();
      const iterator = b.election('ttl').observe({ signal: controller.signal });
      const first = await within(iterator.next(), 1_000, 'the latest change');
      assert.deepEqual(first.value, {
        type: 'elected',
        leader: { value: 'x', fencingToken: term.fencingToken },
        fencingToken: term.fencingToken,
      });
      // As a crash would: nobody resigns, the key just lapses.
      await suite.command(['PEXPIRE', keyOf(prefix, 'ttl', 'election', 'leader'), 200]);
      term.end(new LockReleasedError('ttl', 'abandoned by the test'));
      const started = performance.now();
      const second = await within(iterator.next(), 2_000, 'the vacancy');
      assert.deepEqual(second.value, { type: 'vacant', leader: undefined, fencingToken: term.fencingToken });
      assert.ok(performance.now() - started < 1_200, 'reported at the TTL, not later');
      await iterator.return();
      assert.equal(await b.election('ttl').leader(), undefined);
      const next = await b.election('ttl').campaign('y');
      assert.ok(next.fencingToken > term.fencingToken);
      await next.resign();
    });

    test('close() rejects candidates and observers and resigns its leader', async () => {
      const { prefix, lhs } = await suite.instances(1_000, 1_000);
      const [a, b] = lhs as [Leasehold, Leasehold];
      const term = await a.election('close').campaign('me');
      const candidate = a
        .election('close')
        .campaign('you', { timeout: 10_000 })
        .catch((e: unknown) => e);
      const mine = collect(a, 'close', new AbortController().signal);
      const controller = new AbortController();
      const theirs = collect(b, 'close', controller.signal);
      await theirs.count(1);
      await a.close();
      assert.ok((await candidate) instanceof ConnectionClosedError);
      assert.ok((await mine.done) instanceof ConnectionClosedError);
      assert.ok((await aborted(term.signal)) instanceof LockReleasedError);
      assert.equal(await suite.command(['EXISTS', keyOf(prefix, 'close', 'election', 'leader')]), 0);
      await assert.rejects(a.election('close').leader(), ConnectionClosedError);
      await theirs.count(2);
      assert.equal(theirs.seen[1]?.type, 'vacant', 'the other instance saw the resignation');
      controller.abort();
      await theirs.done;
    });
  });
}
