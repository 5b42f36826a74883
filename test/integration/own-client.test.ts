import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { Leasehold, LockLostError } from '../../src/index.ts';
import {
  aborted,
  lockKey,
  mode,
  testDriver,
  testNotifications,
  tracking,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();

async function clientCount(): Promise<number> {
  const list = String(await command(redis.server.port, ['CLIENT', 'LIST']));
  // Less the connection that asks.
  return list.trim().split('\n').length - 1;
}

/** The user's own client of this run's kind, connected. */
async function userClient(): Promise<{ client: unknown; ping(): Promise<unknown>; close(): Promise<void> }> {
  if (testDriver === 'ioredis') {
    const client = new Redis(redis.server.url);
    await client.ping();
    return { client, ping: () => client.ping(), close: async () => void client.disconnect() };
  }
  const client = createClient({ url: redis.server.url });
  await client.connect();
  return { client, ping: () => client.ping(), close: async () => client.destroy() };
}

describe(`a user's own client (${mode})`, () => {
  // Regression: a node-redis client passed before connect() made tryAcquire fail with "The client
  // is closed" and acquire() wait forever. The docs promise "connected or connectable".
  test('a client not connected yet is connected by Leasehold.connect() and left open on close', async () => {
    const client =
      testDriver === 'ioredis'
        ? new Redis(redis.server.url, { lazyConnect: true })
        : createClient({ url: redis.server.url });
    const lh = await within(
      Leasehold.connect({ client, prefix: uniquePrefix(), notifications: testNotifications }),
      10_000,
      'connect() with a client not connected yet',
    );
    try {
      const lease = await within(
        lh.acquire('fresh', { timeout: 2_000 }),
        3_000,
        'acquire on a client connected for us',
      );
      assert.equal(await lh.tryAcquire('fresh'), undefined);
      await lease.release();
      await lh.close();
      assert.equal(client instanceof Redis ? await client.ping() : await client.ping(), 'PONG');
    } finally {
      // Never leave a connection behind on failure (see exercise() below).
      await lh.close();
      if (client instanceof Redis) client.disconnect();
      else client.destroy();
    }
  });

  test('leasehold opens only the notification connection and leaves the client open on close', async () => {
    const user = await userClient();
    const before = await clientCount();
    const prefix = uniquePrefix();
    const lh = await Leasehold.connect({
      client: user.client,
      prefix,
      ttl: tracking ? 6_000 : 300,
      notifications: testNotifications,
      retryDelay: 20,
    });
    try {
      await exercise(lh, user, before, prefix);
    } finally {
      // A failed assertion must not leave connections behind: a client still connected when the
      // server stops reconnects forever and keeps this file's process alive (a CI run hung on it).
      await lh.close();
      await user.close();
    }
  });
});

async function exercise(
  lh: Leasehold,
  user: { ping(): Promise<unknown> },
  before: number,
  prefix: string,
): Promise<void> {
  {
    // The notification canary runs after connect() resolves and opens a short-lived connection
    // of its own to poke its key; count once it has come and gone.
    await until(
      'only the notification connection to stay open',
      async () => (await clientCount()) === before + (tracking ? 1 : 0),
      { timeout: 5_000, interval: 20 },
    );

    const lease = await lh.acquire('own');
    assert.equal(await command(redis.server.port, ['GET', lockKey(prefix, 'own')]), lease.stored);
    await command(redis.server.port, ['DEL', lockKey(prefix, 'own')]);
    const reason = await within(aborted(lease.signal), tracking ? 1_000 : 2_000, 'holder notices the DEL');
    assert.ok(reason instanceof LockLostError);

    await command(redis.server.port, ['SET', lockKey(prefix, 'wake'), 'other', 'PX', '10000']);
    const waiting = lh.acquire('wake', { timeout: 5_000 });
    await sleep(30);
    await command(redis.server.port, ['DEL', lockKey(prefix, 'wake')]);
    const woke = await within(waiting, tracking ? 500 : 1_000, 'waiter wakes on a foreign release');
    await woke.release();

    await lh.close();
    assert.equal(await user.ping(), 'PONG', "the user's client stays open");
    await until("only the user's client to stay connected", async () => (await clientCount()) === before, {
      timeout: 5_000,
      interval: 20,
    });
  }
}
