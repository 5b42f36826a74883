// A command in flight when the connection drops must fail, never be sent again after the
// reconnect: ioredis re-sends unanswered commands by default, which replayed an acquire nobody
// waited for any more (an orphan key for a whole TTL) or ran it before tracking was re-armed.
// The proxy swallows the acquire, then drops the connection, as a network failure between the
// write and its reply would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisUnavailableError } from '../../src/index.ts';
import { connect, lockKey, mode, uniquePrefix, within } from '../harness/leasehold.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

describe(`no replays after a reconnect (${mode})`, () => {
  test('an acquire in flight when the connection drops fails and leaves no key after the reconnect', {
    timeout: 30_000,
  }, async () => {
    await using proxy = await FaultProxy.start(server.port);
    const prefix = uniquePrefix('replay');
    const lh = await connect(server, { url: proxy.url, prefix, ttl: 5_000 });
    proxy.blackhole(true);
    const attempt = lh.tryAcquire('job').then(
      (lease) => ({ lease }),
      (error: unknown) => ({ error }),
    );
    await sleep(50);
    proxy.blackhole(false);
    proxy.resetAll();
    const outcome = await within(attempt, 5_000, 'the attempt settles');
    assert.ok('error' in outcome, `the attempt was replayed and acquired: ${JSON.stringify(outcome)}`);
    assert.ok(outcome.error instanceof RedisUnavailableError, String(outcome.error));
    // Give a replay time to happen, then look.
    await sleep(300);
    assert.equal(await command(server.port, ['EXISTS', lockKey(prefix, 'job')]), 0, 'no orphan key');
    await lh.close();
  });
});
