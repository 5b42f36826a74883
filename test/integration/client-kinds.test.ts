// Clients beyond the two plain ones (issue 23 item 4): an iovalkey client (Valkey's fork of
// ioredis) and iovalkey by URL, and a node-redis client that uses client-side caching of its own,
// with which leasehold makes a command connection of its own instead of refusing it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Valkey } from 'iovalkey';
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
const run = promisify(execFile);

/** Connections to the test's server, less the one that asks. */
async function clientCount(): Promise<number> {
  const list = String(await command(redis.server.port, ['CLIENT', 'LIST']));
  return list.trim().split('\n').length - 1;
}

/** Holds, loses to an outside DEL (heard at once when tracking), and releases. */
async function exercise(lh: Leasehold, prefix: string): Promise<void> {
  const lease = await lh.acquire('kind', { ttl: tracking ? 6_000 : 300 });
  assert.equal(await command(redis.server.port, ['GET', lockKey(prefix, 'kind')]), lease.stored);
  assert.equal(await lh.tryAcquire('kind'), undefined, 'held');
  await command(redis.server.port, ['DEL', lockKey(prefix, 'kind')]);
  const reason = await within(aborted(lease.signal), tracking ? 1_000 : 2_000, 'the holder notices the DEL');
  assert.ok(reason instanceof LockLostError);
  const again = await lh.acquire('kind', { timeout: 2_000 });
  await again.release();
  assert.equal(await command(redis.server.port, ['EXISTS', lockKey(prefix, 'kind')]), 0, 'released');
}

// Each kind runs once, in the environment of its family; the others skip with the reason.
const ioredisFamily = testDriver === 'ioredis' ? false : 'runs with the ioredis driver only';
const nodeRedisFamily = testDriver === 'node-redis' ? false : 'runs with the node-redis driver only';

describe(`client kinds (${mode})`, () => {
  test('an iovalkey client is taken as an ioredis one and left open on close', {
    skip: ioredisFamily,
  }, async () => {
    const client = new Valkey(redis.server.url);
    const prefix = uniquePrefix('iovalkey');
    try {
      await client.ping();
      const lh = await Leasehold.connect({
        client,
        prefix,
        notifications: testNotifications,
        retryDelay: 20,
      });
      try {
        assert.equal(lh.stats.driver, 'ioredis');
        await exercise(lh, prefix);
      } finally {
        await lh.close();
      }
      assert.equal(await client.ping(), 'PONG', "the user's client stays open");
      // `driver: 'iovalkey'` names it as well; any other driver is refused.
      const named = await Leasehold.connect({
        client,
        driver: 'iovalkey',
        prefix,
        notifications: testNotifications,
      });
      await named.close();
      await assert.rejects(
        Leasehold.connect({ client, driver: 'node-redis', prefix }),
        (error: Error) => error instanceof TypeError && /driver/.test(error.message),
      );
    } finally {
      client.disconnect();
    }
  });

  test("driver: 'iovalkey' opens leasehold's own connections with iovalkey", {
    skip: ioredisFamily,
  }, async () => {
    const prefix = uniquePrefix('iovalkey');
    const lh = await Leasehold.connect({
      url: redis.server.url,
      driver: 'iovalkey',
      prefix,
      notifications: testNotifications,
      retryDelay: 20,
    });
    try {
      assert.equal(lh.stats.driver, 'iovalkey');
      await exercise(lh, prefix);
    } finally {
      await lh.close();
    }
  });

  test('with only iovalkey installed, leasehold picks it and never loads ioredis', {
    // The packages are hidden by a Node module-loader hook (module.register), which Bun does not run.
    skip:
      ioredisFamily ||
      ('bun' in process.versions ? 'hides packages with a Node loader hook, which Bun does not run' : false),
  }, async () => {
    // A process where `redis` and `ioredis` cannot be resolved (test/harness/hide-packages.mjs).
    const src = new URL('../../src/index.ts', import.meta.url).pathname;
    const script = `
      import { Leasehold } from ${JSON.stringify(src)};
      import Valkey from 'iovalkey';
      const out = { ioredis: await import('ioredis').then(() => 'loaded', (e) => e.code) };
      const lh = await Leasehold.connect({ url: ${JSON.stringify(redis.server.url)}, prefix: 'hidden',
        notifications: ${JSON.stringify(testNotifications)} });
      out.driver = lh.stats.driver;
      const lease = await lh.acquire('only-iovalkey', { timeout: 2000 });
      const client = new Valkey(${JSON.stringify(redis.server.url)});
      const other = await Leasehold.connect({ client, prefix: 'hidden', notifications: ${JSON.stringify(testNotifications)} });
      out.busy = (await other.tryAcquire('only-iovalkey')) === undefined;
      await lease.release();
      const next = await other.tryAcquire('only-iovalkey');
      out.next = next !== undefined;
      await next?.release();
      await other.close();
      client.disconnect();
      await lh.close();
      console.log(JSON.stringify(out));`;
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        './test/harness/hide-packages.mjs',
        '--input-type=module',
        '-e',
        script,
      ],
      { env: { ...process.env, LEASEHOLD_HIDE_PACKAGES: 'redis,ioredis' }, timeout: 30_000 },
    );
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}'), {
      ioredis: 'ERR_MODULE_NOT_FOUND',
      driver: 'iovalkey',
      busy: true,
      next: true,
    });
  });

  test('a node-redis client with its own clientSideCache: leasehold uses a connection of its own', {
    skip: nodeRedisFamily,
  }, async () => {
    const client = createClient({
      url: redis.server.url,
      RESP: 3,
      clientSideCache: { ttl: 0, maxEntries: 100 },
    });
    await client.connect();
    const prefix = uniquePrefix('csc');
    try {
      const before = await clientCount();
      const lh = await Leasehold.connect({
        client,
        prefix,
        notifications: testNotifications,
        retryDelay: 20,
      });
      try {
        // One command connection of leasehold's own, taking its own pushes; the canary's short
        // connection comes and goes.
        await until('leasehold’s own connection', async () => (await clientCount()) === before + 1, {
          timeout: 5_000,
          interval: 20,
        });
        await exercise(lh, prefix);
        // The user's cache still works as node-redis documents: a cached GET is invalidated by a write.
        await client.set(`${prefix}:cached`, 'one');
        assert.equal(await client.get(`${prefix}:cached`), 'one');
        await command(redis.server.port, ['SET', `${prefix}:cached`, 'two']);
        await until(
          'the user’s cache invalidated',
          async () => (await client.get(`${prefix}:cached`)) === 'two',
          {
            timeout: 2_000,
            interval: 10,
          },
        );
      } finally {
        await lh.close();
      }
      assert.equal(await client.ping(), 'PONG', "the user's client stays open");
      await until('leasehold’s connection closed', async () => (await clientCount()) === before, {
        timeout: 5_000,
        interval: 20,
      });
    } finally {
      client.destroy();
    }
  });
});
