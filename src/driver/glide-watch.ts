import { createConnection, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TlsOptions } from '../base/tls.ts';
import { reconnectDelay } from './node-redis-client.ts';
import { encode, type Reply, readReplies } from './resp.ts';

/** What a Watch reports. Handlers must not throw. */
export interface WatchHandlers {
  /** Connected and every channel subscribed (again): the server may have restarted meanwhile. */
  up(): void;
  /** The connection dropped: the server is gone or restarted, or the network failed. */
  down(error: Error): void;
  /** A message published on one of the channels. */
  message(channel: string, text: string): void;
  /** `channel` is subscribed (again): messages published on it from now on arrive. */
  subscribed(channel: string): void;
}

/**
 * The channel a Watch always listens on, so that the connection is in subscribe mode (which Redis's
 * idle `timeout` spares) while no grant channel is subscribed. Nothing reaches a plain subscriber
 * there: Redis sends invalidation messages only to the connection a client redirects to. An ACL
 * for leasehold allows it already (docs/security.md: ioredis needs it).
 */
const IDLE_CHANNEL = '__redis__:invalidate';

/**
 * A RESP2 subscriber connection of leasehold's own beside a Valkey GLIDE client, which reconnects
 * without telling: this one tells. It stays subscribed (to the instance's grant channels, or to a
 * channel nobody publishes on), so Redis's idle `timeout` never closes it and it costs no command
 * while nothing happens; when the server dies or restarts, or the connection is reset, its socket
 * closes at once and `down` says so, as a node-redis or ioredis connection's 'error' does. It
 * reconnects by itself (backoff from node-redis-client.ts) and re-subscribes, then `up`. A server
 * that stops answering but keeps the socket open (a stall, a black hole) is left to the command
 * watchdog: nothing is sent here that could go unanswered.
 */
export class Watch {
  readonly #url: URL;
  readonly #tls: TlsOptions | undefined;
  readonly #handlers: WatchHandlers;
  readonly #connectTimeout: number;
  readonly #channels = new Set<string>([IDLE_CHANNEL]);
  #socket: Socket | undefined;
  /** The channels the connection's first SUBSCRIBE named, not confirmed yet. */
  readonly #pending = new Set<string>();
  /** The channels the connection's first SUBSCRIBE named. */
  #named = new Set<string>();
  #ready = false;
  #closed = false;
  #retries = 0;
  #timer: NodeJS.Timeout | undefined;
  #started: { resolve(): void; reject(error: Error): void } | undefined;

  constructor(url: string, tls: TlsOptions | undefined, handlers: WatchHandlers, connectTimeout: number) {
    this.#url = new URL(url);
    this.#tls = tls;
    this.#handlers = handlers;
    this.#connectTimeout = connectTimeout;
  }

  /** Connects; resolves once subscribed, rejects with the first failure (no retry before start). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#started = { resolve, reject };
      this.#open();
    });
  }

  get ready(): boolean {
    return this.#ready;
  }

  subscribe(channel: string): void {
    if (this.#channels.has(channel)) return;
    this.#channels.add(channel);
    if (this.#ready) this.#send(['SUBSCRIBE', channel]);
  }

  unsubscribe(channel: string): void {
    if (!this.#channels.delete(channel)) return;
    if (this.#ready) this.#send(['UNSUBSCRIBE', channel]);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#socket?.destroy();
  }

  #open(): void {
    const host = this.#url.hostname.replace(/^\[|\]$/g, '');
    const port = Number(this.#url.port || 6379);
    const socket =
      this.#url.protocol === 'rediss:'
        ? tlsConnect({
            host,
            port,
            ...(isIP(host) === 0 ? { servername: host } : {}),
            ...this.#tls,
          })
        : createConnection({ host, port });
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.setTimeout(this.#connectTimeout);
    let buffer: Buffer = Buffer.alloc(0);
    socket.once(this.#url.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => this.#hello(socket));
    socket.on('timeout', () => socket.destroy(new Error(`no answer within ${this.#connectTimeout} ms`)));
    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      try {
        const { replies, rest } = readReplies(buffer);
        buffer = rest;
        for (const reply of replies) {
          // An error reply destroyed it: what came after in the same chunk no longer counts.
          if (socket.destroyed) break;
          this.#read(socket, reply);
        }
      } catch (error) {
        socket.destroy(error as Error);
      }
    });
    let failure: Error | undefined;
    socket.on('error', (error) => {
      failure ??= error;
    });
    socket.on('close', () => this.#dropped(socket, failure ?? new Error('the connection to Redis closed')));
  }

  /**
   * AUTH when the URL carries a password, SELECT its database (pub/sub ignores it, but a server
   * without that database refuses it here, at once, as the other clients' handshakes do), then
   * every channel.
   */
  #hello(socket: Socket): void {
    const password = decodeURIComponent(this.#url.password);
    const username = decodeURIComponent(this.#url.username);
    const database = this.#url.pathname.replace(/^\//, '');
    const commands: string[][] = [];
    if (password !== '') commands.push(username === '' ? ['AUTH', password] : ['AUTH', username, password]);
    if (database !== '' && database !== '0') commands.push(['SELECT', database]);
    commands.push(['SUBSCRIBE', ...this.#channels]);
    this.#named = new Set(this.#channels);
    this.#pending.clear();
    for (const channel of this.#channels) this.#pending.add(channel);
    socket.write(commands.map(encode).join(''));
  }

  #read(socket: Socket, reply: Reply): void {
    if (reply instanceof Error) {
      socket.destroy(reply);
      return;
    }
    if (!Array.isArray(reply)) return; // AUTH's and SELECT's +OK
    const [kind, channel, payload] = reply;
    if (typeof channel !== 'string') return;
    if (kind === 'message') {
      this.#handlers.message(channel, String(payload));
      return;
    }
    if (kind !== 'subscribe') return;
    if (this.#channels.has(channel)) this.#handlers.subscribed(channel);
    if (this.#ready || !this.#pending.delete(channel) || this.#pending.size > 0) return;
    // Subscribed: from now on only pushes come, and Redis's idle timeout spares the connection.
    socket.setTimeout(0);
    this.#ready = true;
    this.#retries = 0;
    // Channels asked for while the connection was being made.
    const late = [...this.#channels].filter((c) => !this.#named.has(c));
    if (late.length > 0) this.#send(['SUBSCRIBE', ...late]);
    const started = this.#started;
    this.#started = undefined;
    started?.resolve();
    this.#handlers.up();
  }

  #dropped(socket: Socket, error: Error): void {
    if (socket !== this.#socket) return;
    const wasReady = this.#ready;
    this.#ready = false;
    this.#socket = undefined;
    if (this.#started !== undefined) {
      const started = this.#started;
      this.#started = undefined;
      started.reject(error);
      return;
    }
    if (this.#closed) return;
    if (wasReady) this.#handlers.down(error);
    const delay = reconnectDelay(this.#retries++);
    this.#timer = setTimeout(() => this.#open(), delay);
    this.#timer.unref();
  }

  #send(args: readonly string[]): void {
    this.#socket?.write(encode(args));
  }
}
