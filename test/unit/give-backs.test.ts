// How queued give-backs are paced: a try that waited out its call (a black hole) is followed at
// once, so that one is in flight when the network heals; a quick failure (a refused connection)
// backs off. Before 2026-11-29 both backed off (50, 100, 200 ms ...), and a name on PostgreSQL
// stayed taken for up to one gap after a heal (docs/safety.md, blackhole-heal x postgres (fair)).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { monotonic } from '../../src/base/clock.ts';
import { GiveBacks } from '../../src/engine/give-backs.ts';
import { RedisUnavailableError } from '../../src/errors.ts';

const unavailable = () => new RedisUnavailableError('no reply (test)');

/** Queues one give-back whose first `failures` tries fail after `takes` ms; resolves with each try's start. */
async function pace(failures: number, takes: number): Promise<number[]> {
  const starts: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const giveBacks = new GiveBacks(() => {}, 50);
  giveBacks.add(
    'job',
    async () => {
      starts.push(monotonic());
      await sleep(takes);
      if (starts.length <= failures) throw unavailable();
      done();
    },
    60_000,
  );
  // GiveBacks' timer is unref'd (pending give-backs never keep a process alive): on Node 22 the
  // test's process would end with `finished` pending.
  const alive = setInterval(() => {}, 1_000);
  await finished;
  clearInterval(alive);
  return starts;
}

test('a try that waited out its call is followed at once', async () => {
  const starts = await pace(4, 120);
  const gaps = starts.slice(1).map((start, i) => start - starts[i]! - 120);
  // Each try after the first starts as the previous ends; backing off would leave 100, 200, 400 ms.
  for (const gap of gaps)
    assert.ok(gap < 90, `gaps after stalled tries: ${gaps.map(Math.round).join(', ')} ms`);
});

test('quick failures back off: 50, 100, 200 ms between tries', async () => {
  const starts = await pace(3, 0);
  const gaps = starts.slice(1).map((start, i) => start - starts[i]!);
  assert.equal(gaps.length, 3);
  assert.ok(
    gaps[0]! >= 95 && gaps[1]! >= 195 && gaps[2]! >= 395,
    `gaps: ${gaps.map(Math.round).join(', ')} ms`,
  );
});
