// Connection failures say why, and say it at once: refused, unresolvable and rejected (AUTH,
// database index) fail connect() with the OS's or the server's own reason as `cause`, where
// node-redis used to retry until connectTimeout and report "no answer". A waiter whose Redis is
// down times out with the connection failure as its cause, and an outage is one 'disconnected'
// and one 'reconnected', not one per reconnect attempt.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConnectError, Leasehold, LockTimeoutError } from '../../src/index.ts';
import {
  connect,
  mode,
  testDriver,
  testNotifications,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { freePort } from '../harness/ports.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis({
  prepare: (server) =>
    command(server.port, ['ACL', 'SETUSER', 'someone', 'on', '>right', '~*', '&*', '+@all']),
});

/** connect() with a connect timeout so long that only failing fast can pass within the test. */
async function connectError(url: string): Promise<ConnectError> {
  const attempt = Leasehold.connect({
    url,
    driver: testDriver,
    notifications: testNotifications,
    connectTimeout: 60_000,
  });
  const error = await within(
    attempt.then(
      () => undefined,
      (e: unknown) => e,
    ),
    10_000,
    `connect(${url}) fails fast`,
  );
  assert.ok(error instanceof ConnectError, String(error));
  return error;
}

describe(`connection failures say why (${mode})`, () => {
  test('a closed port: ECONNREFUSED as the cause', async () => {
    const error = await connectError(`redis://127.0.0.1:${await freePort()}`);
    assert.match(error.message, /ECONNREFUSED/);
    assert.match(String((error.cause as Error).message), /ECONNREFUSED/);
  });

  test('an unknown host: ENOTFOUND as the cause', async () => {
    const error = await connectError('redis://no-such-host.invalid:6379');
    assert.match(String((error.cause as Error).message), /ENOTFOUND/);
  });

  test('a database index the server does not have: its refusal, on both drivers', async () => {
    const error = await connectError(`${redis.server.url}/99`);
    assert.match(String((error.cause as Error).message), /DB index/);
  });

  test('a wrong password: WRONGPASS, and the password is not in the message', async () => {
    const error = await connectError(`redis://someone:wrong@127.0.0.1:${redis.server.port}`);
    assert.match(String((error.cause as Error).message), /WRONGPASS/);
    assert.doesNotMatch(error.message, /wrong@/);
  });

  test('a waiter whose Redis is down times out with the connection failure as the cause', async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const prefix = uniquePrefix('down');
    const holder = await connect(redis.server, { prefix, ttl: 10_000 });
    const lh = await connect(redis.server, { url: proxy.url, prefix, retryDelay: 20 });
    const lease = await holder.acquire('job');
    await proxy.cut(true);
    const error = await lh.acquire('job', { timeout: 400 }).catch((e: unknown) => e);
    assert.ok(error instanceof LockTimeoutError, String(error));
    assert.match(error.message, /Redis was unreachable/);
    assert.ok(error.cause instanceof Error);
    await proxy.cut(false);
    await lease.release();
    await Promise.all([lh.close(), holder.close()]);
  });

  test("an outage is one 'disconnected' and one 'reconnected', however many attempts fail", async () => {
    await using proxy = await FaultProxy.start(redis.server.port);
    const lh = await connect(redis.server, { url: proxy.url, prefix: uniquePrefix('outage') });
    const events: string[] = [];
    lh.on('disconnected', ({ error }) =>
      events.push(`disconnected:${error === undefined ? 'no error' : 'error'}`),
    );
    lh.on('reconnected', () => events.push('reconnected'));
    await proxy.cut(true);
    // Long enough for several reconnect attempts of either client.
    await sleep(1_500);
    await proxy.cut(false);
    await within(
      (async () => {
        while (!events.includes('reconnected')) await sleep(20);
      })(),
      10_000,
      'reconnected',
    );
    await sleep(200);
    assert.deepEqual(events, ['disconnected:error', 'reconnected']);
    await lh.close();
  });
});
