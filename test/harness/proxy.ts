import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FrameSplitter, isInvalidation } from './resp-frames.ts';

interface Pair {
  client: Socket;
  upstream: Socket;
}

/**
 * A TCP proxy in front of one Redis port that injects faults (after node-redis's test-utils
 * proxy): latency, a silent black hole, connection resets and refused connections, and (with
 * `dropPushes`) invalidation pushes lost on the way while every reply passes. Only that one
 * parses RESP; the other faults apply to whatever bytes pass. Listens on a free loopback port.
 *
 * @example
 * const proxy = await FaultProxy.start(server.port);
 * const client = createClient({ url: proxy.url });
 * proxy.setLatency(50);
 */
export class FaultProxy {
  #target: number;
  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  #port = 0;
  /** Latency of each direction: `up` client to Redis, `down` Redis to client. */
  #latency = { up: 0, down: 0 };
  #blackhole = false;
  #holding = false;
  /** Flushers of every direction of every connection, run when a hold ends. */
  readonly #resumers = new Set<() => void>();
  #dropPushes = false;
  /** Pushes dropped so far (with dropPushes on). */
  droppedPushes = 0;
  #cut = false;
  #stopped = false;

  private constructor(targetPort: number) {
    this.#target = targetPort;
    this.#server = createServer((client) => this.#accept(client));
  }

  static async start(targetPort: number): Promise<FaultProxy> {
    const proxy = new FaultProxy(targetPort);
    await proxy.#listen(0);
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  /** The port connections made from now on go to. */
  get targetPort(): number {
    return this.#target;
  }

  /**
   * Sends new connections to `port` and resets the open ones, as a failover endpoint (a managed
   * service's primary address, a virtual IP) does when it moves to a promoted replica.
   */
  retarget(port: number): void {
    this.#target = port;
    this.resetAll();
  }

  get url(): string {
    return `redis://127.0.0.1:${this.#port}`;
  }

  /** Open client connections (each with its upstream connection). */
  get connections(): number {
    return this.#pairs.size;
  }

  /**
   * Delays every chunk by `latency` ms, keeping order: in both directions, or only `up` (client
   * to Redis) or `down` (Redis to client), as an asymmetric route would. 0 turns it off.
   */
  setLatency(latency: number, direction: 'both' | 'up' | 'down' = 'both'): void {
    const ms = Math.max(0, latency);
    if (direction !== 'down') this.#latency.up = ms;
    if (direction !== 'up') this.#latency.down = ms;
  }

  /**
   * A black hole that heals the way TCP does: while on, nothing is forwarded in either
   * direction and the connections stay open; what was sent meanwhile is held, and delivered in
   * order when it ends (TCP retransmits until the path works again). `blackhole()` drops bytes
   * instead, as a path that never heals would before the connections reset.
   */
  hold(on: boolean): void {
    this.#holding = on;
    if (!on) for (const resume of [...this.#resumers]) resume();
  }

  /**
   * While on, invalidation pushes from Redis (RESP3 pushes and RESP2 `__redis__:invalidate`
   * messages) are dropped; every other reply passes, in order. As a proxy or a managed service
   * that does not forward pushes would. Applies to connections made while it is on.
   */
  dropPushes(on: boolean): void {
    this.#dropPushes = on;
  }

  /** While on, bytes in both directions (including delayed ones) are dropped; sockets stay open. */
  blackhole(on: boolean): void {
    this.#blackhole = on;
  }

  /** Resets every connection: clients get ECONNRESET, as after a server crash or a middlebox. */
  resetAll(): void {
    for (const pair of this.#pairs) {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
  }

  /**
   * While on, the proxy stops listening (new connections get ECONNREFUSED) and closes the
   * existing ones. Off listens again on the same port.
   */
  async cut(on: boolean): Promise<void> {
    if (on === this.#cut || this.#stopped) return;
    this.#cut = on;
    if (on) await this.#close();
    else await this.#listen(this.#port);
  }

  /** Closes every connection and the listener; safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (!this.#cut) await this.#close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  async #listen(port: number): Promise<void> {
    this.#server.listen(port, '127.0.0.1');
    await once(this.#server, 'listening');
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
    this.#port = address.port;
  }

  async #close(): Promise<void> {
    const closed = once(this.#server, 'close');
    this.#server.close();
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
    await closed;
  }

  #accept(client: Socket): void {
    if (this.#cut || this.#stopped) {
      client.on('error', () => {});
      client.destroy();
      return;
    }
    const upstream = createConnection({ port: this.#target, host: '127.0.0.1' });
    const pair: Pair = { client, upstream };
    this.#pairs.add(pair);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.#forward(client, upstream, pair, 'up');
    this.#forward(upstream, client, pair, 'down', this.#dropPushes ? this.#pushFilter() : undefined);
    // The target refusing or resetting looks like a reset to the client; a clean close, like one.
    upstream.on('error', () => {
      this.#pairs.delete(pair);
      if (!client.destroyed) client.resetAndDestroy();
    });
    client.on('error', () => {
      this.#pairs.delete(pair);
      upstream.destroy();
    });
  }

  /** Whole frames in, the same frames but invalidation pushes out. */
  #pushFilter(): (chunk: Buffer) => Buffer {
    const splitter = new FrameSplitter();
    return (chunk) => {
      const kept = splitter.push(chunk).filter((frame) => {
        if (!isInvalidation(frame)) return true;
        this.droppedPushes += 1;
        return false;
      });
      return Buffer.concat(kept);
    };
  }

  /**
   * Copies `from` to `to` through a FIFO of release times, so latency never reorders bytes. While
   * a hold is on, nothing leaves the FIFO (nor does a close: the peer hears of it after the hold).
   */
  #forward(
    from: Socket,
    to: Socket,
    pair: Pair,
    direction: 'up' | 'down',
    filter?: (chunk: Buffer) => Buffer,
  ): void {
    const queue: { chunk: Buffer; at: number }[] = [];
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const write = (chunk: Buffer) => {
      if (!this.#blackhole && !to.destroyed) to.write(chunk);
    };
    const finish = () => {
      this.#pairs.delete(pair);
      this.#resumers.delete(flush);
      if (!to.destroyed) to.end();
    };
    const flush = () => {
      timer = undefined;
      if (this.#holding) return;
      const now = performance.now();
      while (queue[0] !== undefined && queue[0].at <= now) write(queue.shift()!.chunk);
      if (queue[0] !== undefined) timer = setTimeout(flush, queue[0].at - now);
      else if (ended) finish();
    };
    this.#resumers.add(flush);
    from.on('data', (data: Buffer) => {
      if (this.#blackhole) return;
      const chunk = filter === undefined ? data : filter(data);
      if (chunk.length === 0) return;
      const latency = this.#latency[direction];
      if (latency === 0 && queue.length === 0 && !this.#holding) {
        write(chunk);
        return;
      }
      queue.push({ chunk, at: performance.now() + latency });
      if (!this.#holding) timer ??= setTimeout(flush, latency);
    });
    const ending = () => {
      ended = true;
      if (queue.length === 0 && !this.#holding) finish();
    };
    from.on('end', ending);
    from.on('close', ending);
    to.on('close', () => {
      if (timer !== undefined) clearTimeout(timer);
      this.#resumers.delete(flush);
      queue.length = 0;
    });
  }
}
