import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { after, afterEach, before, describe, test } from 'node:test';
import { createClient } from 'redis';
import { until } from '../harness/poll.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { RedisServer } from '../harness/redis-server.ts';

/** One raw connection that sends inline commands and reads reply lines. */
class RawClient {
  readonly socket: Socket;
  readonly closed: Promise<void>;
  isClosed = false;
  #lines: string[] = [];
  #buffer = '';
  #wake: () => void = () => {};

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      const parts = this.#buffer.split('\r\n');
      this.#buffer = parts.pop() ?? '';
      this.#lines.push(...parts);
      this.#wake();
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        resolve();
      }),
    );
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.on('error', () => {});
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  /** Resolves with the next `count` reply lines, or rejects after `timeout` ms. */
  async read(count: number, timeout = 2_000): Promise<string[]> {
    const deadline = Date.now() + timeout;
    while (this.#lines.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no reply within ${timeout} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.#lines.splice(0, count);
  }

  /** Sends one command that has a one-line reply (PING, SET) and returns the reply. */
  async send(line: string, timeout?: number): Promise<string> {
    this.socket.write(`${line}\r\n`);
    const [reply = ''] = await this.read(1, timeout);
    return reply;
  }
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
}

describe('FaultProxy', { timeout: 20_000 }, () => {
  let server: RedisServer;
  let proxy: FaultProxy;
  let clients: RawClient[] = [];
  before(async () => {
    server = await RedisServer.start();
    proxy = await FaultProxy.start(server.port);
  });
  afterEach(async () => {
    for (const client of clients) client.socket.destroy();
    await Promise.all(clients.map((client) => client.closed));
    clients = [];
  });
  after(async () => {
    await proxy?.stop();
    await server?.stop();
  });

  async function connect(): Promise<RawClient> {
    const client = await RawClient.connect(proxy.port);
    clients.push(client);
    return client;
  }

  test('forwards traffic and counts connections', async () => {
    assert.equal(proxy.url, `redis://127.0.0.1:${proxy.port}`);
    const client = await connect();
    assert.equal(await client.send('SET harness-proxy through'), '+OK');
    client.socket.write('GET harness-proxy\r\n');
    assert.deepEqual(await client.read(2), ['$7', 'through']);
    assert.equal(proxy.connections, 1);
    client.socket.destroy();
    await client.closed;
    await until('the proxy to drop the pair', async () => proxy.connections === 0, {
      timeout: 1_000,
      interval: 5,
    });
  });

  test('setLatency delays each direction and keeps order', async () => {
    const client = await connect();
    const [, fast] = await timed(() => client.send('PING'));
    proxy.setLatency(100);
    try {
      const [reply, slow] = await timed(() => client.send('PING'));
      assert.equal(reply, '+PONG');
      assert.ok(slow >= 195, `a PING took ${slow} ms with 100 ms each way`);
      assert.ok(fast < 50, `a PING took ${fast} ms without latency`);
      // Many small writes in a row, each its own chunk, must come back in order.
      for (let i = 0; i < 20; i++) {
        client.socket.write(`ECHO n${i}\r\n`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const lines = await client.read(40);
      assert.deepEqual(
        lines.filter((_, i) => i % 2 === 1),
        Array.from({ length: 20 }, (_, i) => `n${i}`),
      );
    } finally {
      proxy.setLatency(0);
    }
  });

  test('setLatency can delay one direction only', async () => {
    const client = await connect();
    for (const direction of ['up', 'down'] as const) {
      proxy.setLatency(100, direction);
      try {
        const [reply, took] = await timed(() => client.send('PING'));
        assert.equal(reply, '+PONG');
        assert.ok(took >= 95 && took < 195, `a PING took ${took} ms with 100 ms ${direction} only`);
      } finally {
        proxy.setLatency(0);
      }
    }
  });

  test('hold keeps the connection, forwards nothing, and delivers everything in order when it ends', async () => {
    const client = await connect();
    proxy.hold(true);
    try {
      client.socket.write('SET harness-hold held\r\n');
      await assert.rejects(client.send('GET harness-hold', 300), /no reply within 300 ms/);
      assert.equal(client.isClosed, false);
      assert.equal(proxy.connections, 1);
      // Nothing reached Redis: the SET is still held.
      const other = await RawClient.connect(server.port);
      assert.equal(await other.send('EXISTS harness-hold'), ':0');
      other.socket.destroy();
    } finally {
      proxy.hold(false);
    }
    // The SET and the GET arrive now, in order, and their replies come back.
    assert.deepEqual(await client.read(3), ['+OK', '$4', 'held']);
  });

  test('blackhole drops traffic silently without closing the socket', async () => {
    const client = await connect();
    proxy.blackhole(true);
    try {
      await assert.rejects(client.send('PING', 300), /no reply within 300 ms/);
      assert.equal(client.isClosed, false);
      assert.equal(proxy.connections, 1);
    } finally {
      proxy.blackhole(false);
    }
    // The dropped PING never reached Redis, so the stream is still in step.
    client.socket.write('ECHO back\r\n');
    assert.deepEqual(await client.read(2), ['$4', 'back']);
  });

  test('resetAll gives clients ECONNRESET and node-redis reconnects', async () => {
    const raw = await connect();
    const errored = once(raw.socket, 'error');
    const redis = createClient({ url: proxy.url, socket: { reconnectStrategy: () => 20 } });
    const errors: Error[] = [];
    redis.on('error', (error: Error) => errors.push(error));
    await redis.connect();
    try {
      // Not events.once: it would reject on the client's 'error' event, which comes first.
      const reconnecting = new Promise((resolve) => redis.once('reconnecting', resolve));
      proxy.resetAll();
      const [error] = (await errored) as [NodeJS.ErrnoException];
      assert.equal(error.code, 'ECONNRESET');
      await reconnecting;
      assert.equal(await redis.ping(), 'PONG');
      assert.ok(
        errors.some((e) => /ECONNRESET|closed/i.test(String(e))),
        String(errors),
      );
    } finally {
      redis.destroy();
    }
  });

  test('cut refuses new connections and closes existing ones, until lifted', async () => {
    const client = await connect();
    await proxy.cut(true);
    try {
      await client.closed;
      const refused = createConnection({ port: proxy.port, host: '127.0.0.1' });
      const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
      assert.equal(error.code, 'ECONNREFUSED');
    } finally {
      await proxy.cut(false);
    }
    const again = await connect();
    assert.equal(await again.send('PING'), '+PONG');
  });
});
