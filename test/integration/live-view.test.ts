// The live view behind `leasehold top` and the dashboard, on each server line: CLIENT TRACKING
// BCAST PREFIX pushes every write under the prefix (no read needed), only the names pushed are
// read again, and nothing is sent while nothing changes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LiveView, type TimelineEvent } from '../../src/cli/live.ts';
import { aborted, mode, testDriver, tracking, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();

describe(`live view (${mode})`, () => {
  test('BCAST pushes reach it; a takeover is seen at once; a quiet prefix costs no command', {
    skip: testDriver === 'glide' ? 'GLIDE hands its user no pushes: the view polls there' : false,
  }, async () => {
    const prefix = uniquePrefix('live');
    const lh = await redis.instance(prefix, 30_000, { owner: 'a' });
    const held = await lh.acquire('job:held');
    await lh.acquire('other:x'); // outside the view's names: never read
    const view = new LiveView(
      { url: redis.server.url, topology: { kind: 'redis' }, prefix, driver: testDriver },
      'job:',
      100,
    );
    const events: TimelineEvent[] = [];
    view.on('timeline', (e) => events.push(e));
    try {
      await view.start();
      assert.equal(view.mode, 'tracking');
      assert.deepEqual(
        [...view.entries.values()].map((e) => e.inspection.name),
        ['job:held'],
      );
      const next = (type: string) =>
        new Promise<TimelineEvent>((resolve) => {
          const on = (e: TimelineEvent) => {
            if (e.type !== type) return;
            view.off('timeline', on);
            resolve(e);
          };
          view.on('timeline', on);
        });

      const reads = view.reads;
      const processed = async () =>
        Number(
          /total_commands_processed:(\d+)/.exec(
            String(await command(redis.server.port, ['INFO', 'stats'])),
          )?.[1],
        );
      const before = await processed();
      await new Promise((r) => setTimeout(r, 1_000));
      assert.equal((await processed()) - before, 1, 'only the INFO of this check ran');
      assert.equal(view.reads, reads);

      const other = await redis.instance(prefix, 30_000, { owner: 'b' });
      const handoff = next('handoff');
      const at = Date.now();
      await other.forceAcquire('job:held');
      const seen = await within(handoff, 1_000, 'the takeover');
      assert.ok(Date.now() - at < 1_000);
      assert.equal(seen.owner, 'b');
      assert.equal(seen.previousOwner, 'a');
      // A polling holder hears of it at its next extension instead (10 s here).
      if (tracking) await within(aborted(held.signal), 1_000, 'the first holder heard of the takeover');

      const acquired = next('acquired');
      await lh.acquire('job:new');
      assert.equal((await within(acquired, 1_000, 'a new name')).name, 'job:new');
      // Listening before the flush, as for the events above: the view can read the flush's push,
      // scan and re-read both names before this process handles FLUSHALL's own reply (seen under
      // CPU load: both 'released' events 4 ms before that reply, 6 runs of 25).
      const released = next('released');
      await command(redis.server.port, ['FLUSHALL']);
      await within(released, 1_000, 'a flush');
      assert.ok(
        events.every((e) => e.name.startsWith('job:')),
        'names outside the prefix are never shown',
      );
    } finally {
      await view.close();
    }
  });

  test('only live names: an idle name is never shown, a released one leaves the view', async () => {
    const prefix = uniquePrefix('live');
    const lh = await redis.instance(prefix, 30_000, { owner: 'a' });
    // Its fencing counter lives on after the release, and it sorts before the held name: with
    // --limit 1 it used to take the only place.
    await (await lh.acquire('job:a-idle')).release();
    const held = await lh.acquire('job:held');
    const view = new LiveView(
      { url: redis.server.url, topology: { kind: 'redis' }, prefix, driver: testDriver },
      'job:',
      1,
    );
    const shown = () => [...view.entries.values()].map((e) => e.inspection.name);
    try {
      await view.start();
      assert.deepEqual(shown(), ['job:held']);
      const removed = new Promise<string>((resolve) => view.once('remove', ({ name }) => resolve(name)));
      await held.release();
      assert.equal(await within(removed, 5_000, 'the release'), 'job:held');
      assert.deepEqual(shown(), []);
      // A push for the idle name (its counter written again) reads it, and still shows nothing.
      await (await lh.acquire('job:a-idle')).release();
      await view.refresh();
      assert.deepEqual(shown(), []);
    } finally {
      await view.close();
    }
  });
});
