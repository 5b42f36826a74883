import type { RedisClientType } from 'redis';
import { preloadScripts } from '../scripts/index.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  evalArgs,
  isNoScript,
  NO_HANDLERS,
  type ScriptCall,
} from './types.ts';

// node-redis's generic client type is a large union; the driver only uses these members.
type Client = Pick<
  RedisClientType,
  'sendCommand' | 'connect' | 'close' | 'destroy' | 'on' | 'off' | 'isReady'
> & {
  duplicate(options?: object): Client;
  options?: Record<string, unknown>;
};

export interface NodeRedisDriverOptions {
  url: string;
  tracking: boolean;
  /** A user's own client: used for commands and left open on close. */
  client?: unknown;
}

/**
 * node-redis 5/6 driver. With its own connection, RESP3 tracking runs on that same connection
 * (pushes arrive in order with replies) with NOLOOP, so this process's own extensions do not
 * wake itself. With a user's client, that client is tracked with REDIRECT to one extra RESP3
 * connection of ours, the only connection leasehold then opens.
 */
export class NodeRedisDriver implements Driver {
  readonly tracking: boolean;
  #cmd: Client | undefined;
  #notify: Client | undefined;
  readonly #own: boolean;
  readonly #options: NodeRedisDriverOptions;
  #handlers = NO_HANDLERS;
  #closed = false;

  constructor(options: NodeRedisDriverOptions) {
    this.#options = options;
    this.tracking = options.tracking;
    this.#own = options.client === undefined;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    const { createClient } = await import('redis');
    if (this.#own) {
      this.#cmd = createClient({
        url: this.#options.url,
        RESP: 3,
        disableOfflineQueue: true,
        // node-redis 6 arms an AbortSignal.timeout per command by default (5 s): a tenth of the
        // CPU of an acquire. leasehold bounds its own waits (acquire timeouts, lease validity on
        // the monotonic clock, close()'s grace period), as it does on ioredis, which has none.
        commandOptions: { timeout: 0 },
        ...(this.tracking ? { emitInvalidate: true } : {}),
      }) as unknown as Client;
      if (this.tracking) this.#listenForPushes(this.#cmd);
      this.#watchConnection(this.#cmd, () => this.#armSelf());
      await this.#cmd.connect();
      if (this.tracking) await this.#armSelf();
      else await this.#preload();
      return;
    }
    const user = this.#options.client as Client;
    const userOptions = user.options ?? {};
    if (userOptions['clientSideCache'] !== undefined || userOptions['emitInvalidate'] === true) {
      throw new TypeError(
        'leasehold: option "client" must not use client-side caching (clientSideCache / emitInvalidate): ' +
          'leasehold enables CLIENT TRACKING on it with REDIRECT to its own connection',
      );
    }
    this.#cmd = user;
    if (!this.tracking) return;
    this.#notify = user.duplicate({ RESP: 3, emitInvalidate: true, disableOfflineQueue: true });
    this.#listenForPushes(this.#notify);
    this.#watchConnection(this.#notify, () => this.#armRedirect());
    user.on('ready', this.#onUserReady);
    user.on('error', this.#onUserError);
    await this.#notify.connect();
    await this.#armRedirect();
  }

  #onUserReady = () => {
    void this.#armRedirect();
  };

  #onUserError = (error: unknown) => {
    if (!this.#closed) this.#handlers.disconnected(asError(error));
  };

  #listenForPushes(client: Client): void {
    client.on('invalidate', (key: unknown) => {
      this.#handlers.invalidate(key === null ? null : [String(key)]);
    });
  }

  /** `rearm` runs after every reconnect (ready after the first); tracking died with the socket. */
  #watchConnection(client: Client, rearm: () => Promise<void>): void {
    let first = true;
    // node-redis emits 'error' for every socket failure; without a listener that would crash.
    client.on('error', (error: unknown) => {
      if (!this.#closed) this.#handlers.disconnected(asError(error));
    });
    client.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      if (this.tracking) void rearm();
      else void this.#preload().then(() => this.#handlers.reset());
    });
  }

  async #armSelf(): Promise<void> {
    try {
      // node-redis's handshake already sent CLIENT TRACKING ON; re-issuing it adds NOLOOP.
      await this.#cmd!.sendCommand(['CLIENT', 'TRACKING', 'ON', 'NOLOOP']);
      await this.#preload();
      this.#handlers.reset();
    } catch (error) {
      this.#handlers.disconnected(asError(error));
    }
  }

  #preload(): Promise<void> {
    const cmd = this.#cmd;
    return cmd === undefined ? Promise.resolve() : preloadScripts((args) => cmd.sendCommand(args));
  }

  async #armRedirect(): Promise<void> {
    const notify = this.#notify;
    const cmd = this.#cmd;
    if (notify === undefined || cmd === undefined || !notify.isReady || !cmd.isReady) return;
    try {
      const id = await notify.sendCommand(['CLIENT', 'ID']);
      await cmd.sendCommand(['CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id), 'NOLOOP']);
      await preloadScripts((args) => cmd.sendCommand(args));
      this.#handlers.reset();
    } catch (error) {
      this.#handlers.disconnected(asError(error));
    }
  }

  async eval(call: ScriptCall): Promise<unknown> {
    const cmd = this.#cmd!;
    try {
      return await cmd.sendCommand(evalArgs(call, true));
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return cmd.sendCommand(evalArgs(call, false));
    }
  }

  // node-redis writes every command issued in one tick in a single batch: one round trip.
  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const settled = await Promise.allSettled(calls.map((call) => this.eval(call)));
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : asError(s.reason)));
  }

  command(args: readonly string[]): Promise<unknown> {
    return this.#cmd!.sendCommand([...args]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (!this.#own) {
      this.#cmd?.off('ready', this.#onUserReady);
      this.#cmd?.off('error', this.#onUserError);
    }
    const own = this.#own ? this.#cmd : undefined;
    const notify = this.#notify;
    await Promise.all([
      own &&
        closeWithin(
          () => own.close(),
          () => own.destroy(),
        ),
      notify &&
        closeWithin(
          () => notify.close(),
          () => notify.destroy(),
        ),
    ]);
  }
}
