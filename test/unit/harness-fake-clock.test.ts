// The clock shim of test/harness/fake-clock.ts moves a real redis-server's clock, and only its own:
// TIME before and after a jump, and a key whose TTL the jump eats. libfaketime hangs the jemalloc
// builds of redis-server, so the fault matrix's Redis clock-jump scenarios stand on this test.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { FakeClock } from '../harness/fake-clock.ts';
import { RedisServer } from '../harness/redis-server.ts';

const clock = FakeClock.create();
let server: RedisServer;
let client: ReturnType<typeof createClient>;

/** Server TIME minus this process's Date.now(), ms. */
async function serverAhead(): Promise<number> {
  const [seconds, micros] = (await client.sendCommand(['TIME'])) as [string, string];
  return Number(seconds) * 1_000 + Number(micros) / 1_000 - Date.now();
}

describe('fake clock shim for redis-server', {
  skip: clock === undefined ? FakeClock.unavailable : false,
}, () => {
  before(async () => {
    server = await RedisServer.start({ env: clock!.env });
    client = createClient({ url: server.url });
    await client.connect();
  });
  after(async () => {
    await client?.close();
    await server?.stop();
    clock?.remove();
  });

  test('TIME follows a jump forward and back; a forward jump expires a key', async () => {
    assert.ok(Math.abs(await serverAhead()) < 50, 'no offset before the first jump');
    await client.set('k', 'v', { PX: 30_000 });
    clock!.set({ wall: 60_000 }, server.pid);
    await sleep(5);
    const ahead = await serverAhead();
    assert.ok(Math.abs(ahead - 60_000) < 50, `TIME is a minute ahead (${ahead} ms)`);
    assert.equal(await client.exists('k'), 0, 'the jump ate the 30 s TTL');
    clock!.set({ wall: -60_000 }, server.pid);
    await sleep(5);
    const behind = await serverAhead();
    assert.ok(Math.abs(behind + 60_000) < 50, `TIME is a minute behind (${behind} ms)`);
    await client.set('k', 'v', { PX: 30_000 });
    const pttl = await client.pTTL('k');
    assert.ok(pttl > 29_000 && pttl <= 30_000, `a TTL set after the jump counts from the new time (${pttl})`);
    clock!.set({}, server.pid);
    await sleep(5);
    assert.ok(Math.abs(await serverAhead()) < 50, 'back on time');
  });
});
