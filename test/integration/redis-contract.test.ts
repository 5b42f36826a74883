// Pins the Redis and client behaviour the lock machinery is built on (see DESIGN.md, section 2
// and 3). If a server or client upgrade changes one of these, this file says which.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { BasicClientSideCache, createClient } from 'redis';
import { scripts } from '../../src/scripts/index.ts';
import { uniquePrefix } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

type Push = string | null;

/** A node-redis RESP3 connection with tracking on (NOLOOP) and the pushes it received. */
async function tracked() {
  const client = createClient({ url: server.url, RESP: 3, emitInvalidate: true });
  const pushes: Push[] = [];
  client.on('invalidate', (key: unknown) => pushes.push(key === null ? null : String(key)));
  await client.connect();
  await client.sendCommand(['CLIENT', 'TRACKING', 'ON', 'NOLOOP']);
  return { client, pushes };
}

async function plain() {
  const client = createClient({ url: server.url });
  await client.connect();
  return client;
}

/** Waits a little for pushes that should (or should not) arrive. */
const settle = () => sleep(50);

describe('Redis tracking facts leasehold relies on', () => {
  test('a failed acquire script arms tracking for its declared keys (trailing PTTL read)', async () => {
    const key = `${uniquePrefix()}:{a}`;
    const { client, pushes } = await tracked();
    const other = await plain();
    await other.set(key, 'holder', { PX: 10_000 });
    const reply = await client.sendCommand([
      'EVAL',
      scripts.acquire.source,
      '2',
      key,
      `${key}:fence`,
      'me',
      '1000',
    ]);
    assert.equal((reply as unknown as unknown[])[0], 0);
    await other.del(key);
    await settle();
    assert.deepEqual(pushes, [key]);
    client.destroy();
    other.destroy();
  });

  test('tracking is one-shot: no second push until the key is read again', async () => {
    const key = `${uniquePrefix()}:{b}`;
    const { client, pushes } = await tracked();
    const other = await plain();
    await client.sendCommand(['GET', key]);
    await other.set(key, '1');
    await other.set(key, '2');
    await settle();
    assert.deepEqual(pushes, [key]);
    client.destroy();
    other.destroy();
  });

  test('NOLOOP: a connection does not hear about its own writes', async () => {
    const key = `${uniquePrefix()}:{c}`;
    const { client, pushes } = await tracked();
    await client.sendCommand([
      'EVAL',
      scripts.acquire.source,
      '3',
      key,
      `${key}:fence`,
      `${key}:mark`,
      'me',
      '1000',
    ]);
    await client.sendCommand(['EVAL', scripts.extend.source, '1', key, 'me', '1000']);
    await client.sendCommand(['EVAL', scripts.release.source, '1', key, 'me']);
    await settle();
    assert.deepEqual(pushes, []);
    client.destroy();
  });

  test('an extension script re-arms tracking, so a later foreign DEL is heard', async () => {
    const key = `${uniquePrefix()}:{d}`;
    const { client, pushes } = await tracked();
    const other = await plain();
    await client.sendCommand([
      'EVAL',
      scripts.acquire.source,
      '3',
      key,
      `${key}:fence`,
      `${key}:mark`,
      'me',
      '1000',
    ]);
    await client.sendCommand(['EVAL', scripts.extend.source, '1', key, 'me', '1000']);
    await other.del(key);
    await settle();
    assert.ok(pushes.includes(key));
    client.destroy();
    other.destroy();
  });

  test('FLUSHALL sends a null invalidation', async () => {
    const { client, pushes } = await tracked();
    const other = await plain();
    await other.flushAll();
    await settle();
    assert.deepEqual(pushes, [null]);
    client.destroy();
    other.destroy();
  });

  test('RESP2 REDIRECT: an ioredis subscriber gets the keys as an array message', async () => {
    const key = `${uniquePrefix()}:{e}`;
    const sub = new Redis(server.url, { protocol: 2, lazyConnect: true });
    const cmd = new Redis(server.url, { lazyConnect: true });
    await Promise.all([sub.connect(), cmd.connect()]);
    const messages: unknown[] = [];
    sub.on('messageBuffer', (_channel: Buffer, message: unknown) => messages.push(message));
    const id = await sub.call('CLIENT', 'ID');
    await sub.subscribe('__redis__:invalidate');
    await cmd.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id), 'NOLOOP');
    await cmd.get(key);
    const other = await plain();
    await other.set(key, 'x');
    await settle();
    assert.equal(messages.length, 1);
    const [first] = messages as Buffer[][];
    assert.deepEqual(first?.map(String), [key]);
    sub.disconnect();
    cmd.disconnect();
    other.destroy();
  });

  // The node-redis driver receives pushes through this hook rather than `emitInvalidate`, whose
  // handshake CLIENT TRACKING ON makes a refusing server fail every connect (src/driver/node-redis.ts).
  test('node-redis: a BasicClientSideCache subclass gets the pushes; its trackingOn() is the handshake command', async () => {
    const key = `${uniquePrefix()}:{g}`;
    const heard: (string | null)[] = [];
    const handshake: string[][] = [];
    const receiver = new (class extends BasicClientSideCache {
      override trackingOn(): string[] {
        handshake.push(['PING']);
        return ['PING'];
      }
      override invalidate(k: unknown): void {
        heard.push(k === null ? null : String(k));
      }
    })();
    const client = createClient({ url: server.url, RESP: 3, clientSideCache: receiver });
    await client.connect();
    assert.deepEqual(handshake, [['PING']]);
    assert.equal(await client.sendCommand(['CLIENT', 'TRACKING', 'ON', 'NOLOOP']), 'OK');
    await client.sendCommand(['GET', key]);
    const other = await plain();
    await other.set(key, 'x');
    await other.flushAll();
    await settle();
    assert.deepEqual(heard, [key, null]);
    client.destroy();
    other.destroy();
  });

  test('a script that only writes arms nothing (why every script ends with a read)', async () => {
    const key = `${uniquePrefix()}:{f}`;
    const { client, pushes } = await tracked();
    const other = await plain();
    await client.sendCommand(['EVAL', "return redis.call('SET', KEYS[1], 'v')", '1', key]);
    await other.del(key);
    await settle();
    assert.deepEqual(pushes, []);
    client.destroy();
    other.destroy();
  });
});
