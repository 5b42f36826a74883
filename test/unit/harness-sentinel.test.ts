import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSentinel } from 'redis';
import { command, pipeline } from '../harness/resp.ts';
import { SentinelSet } from '../harness/sentinel.ts';

describe('SentinelSet', { timeout: 40_000 }, () => {
  let set: SentinelSet;
  before(async () => {
    set = await SentinelSet.start();
  });
  after(() => set?.stop());

  test('every sentinel reports the initial master, which has the replica attached', async () => {
    const [master, replica] = set.servers;
    assert.ok(master && replica);
    assert.equal(set.sentinelUrls.length, 3);
    for (let i = 0; i < 3; i++) assert.equal(await set.masterPort(i), master.port);
    const role = await command(replica.port, ['ROLE']);
    assert.ok(Array.isArray(role));
    assert.deepEqual(role.slice(0, 3), ['slave', '127.0.0.1', master.port]);
  });

  test('failover promotes the replica and the sentinels report it', async (t) => {
    const [master, replica] = set.servers;
    assert.ok(master && replica);
    const [written, acked] = await pipeline(master.port, [
      ['SET', 'harness-sentinel', 'kept'],
      ['WAIT', 1, 2_000],
    ]);
    assert.deepEqual([written, acked], ['OK', 1]);
    const started = Date.now();
    const promoted = await set.failover();
    t.diagnostic(`failover took ${Date.now() - started} ms`);
    assert.equal(promoted, replica);
    for (let i = 0; i < 3; i++) assert.equal(await set.masterPort(i), replica.port);
    assert.equal(await set.master(), replica);
    const role = await command(replica.port, ['ROLE']);
    assert.ok(Array.isArray(role) && role[0] === 'master');

    const client = createSentinel({ name: set.masterName, sentinelRootNodes: set.sentinelRootNodes });
    client.on('error', () => {});
    await client.connect();
    try {
      assert.equal(await client.get('harness-sentinel'), 'kept');
    } finally {
      await client.destroy();
    }
  });
});
