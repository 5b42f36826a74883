import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createClient } from 'redis';
import { type Masters, startMasters } from '../harness/masters.ts';
import { command } from '../harness/resp.ts';

describe('startMasters', { timeout: 20_000 }, () => {
  let masters: Masters | undefined;
  after(() => masters?.stopAll());

  test('starts N independent servers on distinct ports', async () => {
    masters = await startMasters(3);
    const ports = masters.servers.map((server) => server.port);
    assert.equal(new Set(ports).size, 3);
    assert.deepEqual(
      masters.urls,
      ports.map((port) => `redis://127.0.0.1:${port}`),
    );
    const [first, ...others] = masters.servers;
    assert.ok(first);
    const client = createClient({ url: first.url });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.set('harness-masters', 'one');
      assert.equal(await client.get('harness-masters'), 'one');
    } finally {
      client.destroy();
    }
    for (const server of others) assert.equal(await command(server.port, ['GET', 'harness-masters']), null);
  });

  test('stopAll kills every server', async () => {
    assert.ok(masters);
    await masters.stopAll();
    for (const server of masters.servers) {
      await assert.rejects(command(server.port, ['PING'], 500), /ECONNREFUSED/);
    }
  });
});
