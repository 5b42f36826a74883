import { within } from '../base/timeouts.ts';
import { ConnectionClosedError } from '../errors.ts';
import { Arm, canaryKeyOf } from './arm.ts';
import { CANARY_TIMEOUT } from './canary.ts';
import { missingPackage } from './connect-errors.ts';
import {
  type Client,
  cachesClientSide,
  connectClient,
  deleteKeys,
  pokeOnce,
  pushReceiver,
  reconnectDelay,
  subscribeOn,
} from './node-redis-client.ts';
import { PacedSends } from './paced-sends.ts';
import { Recovery } from './recovery.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  evalArgs,
  isNoScript,
  NO_HANDLERS,
  type NodeDriverOptions,
  NotSentError,
  type ScriptCall,
  type Subscription,
  type SubscriptionHandlers,
  type TrackingProof,
} from './types.ts';
import { DEFAULT_COMMAND_TIMEOUT } from './watchdog.ts';

/**
 * node-redis 5/6 driver. With its own connection, RESP3 tracking runs on that same connection
 * (pushes arrive in order with replies) with NOLOOP, so this process's own extensions do not
 * wake itself. With a user's client, that client is tracked with REDIRECT to one extra RESP3
 * connection of ours, the only connection leasehold then opens.
 *
 * Every command goes through Recovery: a connection that leaves commands unanswered for
 * `commandTimeout` is given up. Our own is replaced by a fresh client (node-redis has no way to
 * drop just its socket); a user's client stays theirs, and only our calls on it fail.
 */
export class NodeRedisDriver implements Driver {
  readonly #tracking: boolean;
  /** The arm sequence and its canary (driver/arm.ts). */
  readonly #sequence = new Arm();
  /** Canary connections open right now: close() destroys them. */
  readonly #pokers = new Set<Client>();
  /** Subscriptions for direct grants (subscribe()). */
  readonly #subs = new Set<Client>();
  #redis: typeof import('redis') | undefined;
  #cmd: Client | undefined;
  #notify: Client | undefined;
  readonly #own: boolean;
  /**
   * A user's client that uses client-side caching of its own: leasehold cannot redirect its
   * tracking, so it makes its own command connection from it (duplicate(): the same server,
   * credentials and TLS) and leaves the client itself alone.
   */
  readonly #template: Client | undefined;
  /** Our own connection's commands, handed to node-redis 8 per write (PacedSends says why). */
  readonly #paced: PacedSends | undefined;
  readonly #options: NodeDriverOptions;
  readonly #recovery: Recovery;
  /** A user's client was given up on: re-arm after its next answer. */
  #suspect = false;
  #handlers = NO_HANDLERS;
  #closed = false;

  constructor(options: NodeDriverOptions) {
    this.#options = options;
    this.#tracking = options.tracking;
    const user = options.client as Client | undefined;
    this.#template = user !== undefined && cachesClientSide(user) ? user : undefined;
    this.#own = user === undefined || this.#template !== undefined;
    this.#paced = this.#own ? new PacedSends() : undefined;
    const limit = options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT;
    this.#recovery = new Recovery(limit, (waited) => this.#stalled(waited));
  }

  get tracking(): boolean {
    return this.#sequence.proof?.ok === true;
  }

  get proof(): TrackingProof | undefined {
    return this.#sequence.proof;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    this.#redis = await import('redis').catch((error: unknown) => {
      throw new Error(missingPackage(error, 'redis') ?? asError(error).message, { cause: error });
    });
    if (this.#own) {
      const cmd = this.#ownClient();
      await connectClient(cmd);
      await this.#armSelf();
      return;
    }
    const user = this.#options.client as Client;
    this.#cmd = user;
    // "Connected or connectable": a client not connected yet is connected here (and stays the
    // user's: close() leaves it open). Without this every command failed ("The client is
    // closed") and acquire() waited forever.
    if (!user.isOpen) await connectClient(user);
    user.on('ready', this.#onUserReady);
    user.on('error', this.#onUserError);
    if (!this.#tracking) return;
    await connectClient(this.#notifyClient());
    await this.#armRedirect();
  }

  /** A new client for our own command connection (at connect, and after giving one up). */
  #ownClient(): Client {
    const redis = this.#redis!;
    const common = {
      RESP: 3 as const,
      disableOfflineQueue: true,
      // leasehold bounds its own waits: Recovery's one watchdog per connection, not node-redis 6's
      // AbortSignal.timeout per command (a timer and a signal for every command).
      commandOptions: { timeout: 0 },
    };
    const cache = this.#tracking ? { clientSideCache: pushReceiver(redis, this.#deliver) } : {};
    const template = this.#template;
    const cmd = (template !== undefined
      ? template.duplicate({
          ...common,
          // The user's cache is theirs: never carried over to our connection.
          clientSideCache: undefined,
          emitInvalidate: false,
          ...cache,
          socket: {
            ...((template.options?.['socket'] as object | undefined) ?? {}),
            connectTimeout: this.#recovery.limit,
            reconnectStrategy: this.#reconnect,
          },
        })
      : redis.createClient({
          url: this.#options.url,
          ...common,
          ...cache,
          // A fresh object: node-redis merges the URL's host, port and tls flag into it.
          socket: {
            connectTimeout: this.#recovery.limit,
            reconnectStrategy: this.#reconnect,
            ...(this.#options.tls === undefined ? {} : { tls: true as const, ...this.#options.tls }),
          },
        })) as unknown as Client;
    this.#cmd = cmd;
    this.#watch(cmd, () => this.#armSelf(), true);
    return cmd;
  }

  /** Our RESP3 connection that a user's client redirects its pushes to. */
  #notifyClient(): Client {
    const notify = (this.#cmd as Client).duplicate({
      RESP: 3,
      disableOfflineQueue: true,
      clientSideCache: pushReceiver(this.#redis!, this.#deliver),
      socket: {
        ...this.#socketOptions(),
        connectTimeout: this.#recovery.limit,
        reconnectStrategy: this.#reconnect,
      },
    });
    this.#notify = notify;
    this.#watch(notify, () => this.#armRedirect(), false);
    return notify;
  }

  /** reconnectDelay, until close(): a client left reconnecting would keep the process alive. */
  readonly #reconnect = (retries: number): number | false => (this.#closed ? false : reconnectDelay(retries));

  readonly #deliver = (keys: string[] | null): void => {
    this.#sequence.canary.hear(keys);
    this.#handlers.invalidate(keys);
  };

  #onUserReady = () => {
    void (this.#tracking ? this.#armRedirect() : this.#armWith(undefined));
  };

  #onUserError = (error: unknown) => {
    if (!this.#closed) this.#handlers.disconnected(asError(error));
  };

  /**
   * `rearm` runs after every reconnect (ready after the first); tracking died with the socket.
   * `commands`: the connection carries our commands, so its handshake is watched like one.
   */
  #watch(client: Client, rearm: () => Promise<void>, commands: boolean): void {
    let first = true;
    const current = () => !this.#closed && (client === this.#cmd || client === this.#notify);
    // node-redis emits 'error' for every socket failure; without a listener that would crash.
    client.on('error', (error: unknown) => {
      if (!current()) return;
      if (commands) this.#recovery.dropped();
      this.#handlers.disconnected(asError(error));
    });
    client.on('connect', () => {
      if (commands && current()) this.#recovery.dog.sent();
    });
    client.on('ready', () => {
      if (!current()) return;
      if (commands) this.#recovery.dog.answered();
      if (first) {
        first = false;
        return;
      }
      void rearm();
    });
  }

  /**
   * No reply for `commandTimeout`: a stalled server or a black-holed network. Our own client is
   * replaced (its calls fail with the stall error); a user's client is left alone. Either way
   * the connection counts as dropped, with what `onDisconnect` says that means for leases.
   */
  #stalled(waited: number): void {
    if (this.#closed) return;
    const error = this.#recovery.abandon(waited);
    this.#handlers.disconnected(error);
    if (!this.#own) {
      this.#suspect = true;
      return;
    }
    const old = this.#cmd;
    const cmd = this.#ownClient();
    old?.destroy();
    // node-redis keeps reconnecting until ready (reconnectDelay never gives up); 'ready' arms it.
    cmd.connect().then(
      () => this.#armSelf(),
      () => {},
    );
  }

  /** The arm sequence (driver/arm.ts) on the command connection; `redirect` names the push target. */
  #armWith(redirect: (() => Promise<string | undefined>) | undefined): Promise<void> {
    const cmd = this.#cmd!;
    return this.#sequence.run({
      send: (args) => this.#command(cmd, args),
      identify: () => this.#recovery.identify((args) => this.#command(cmd, args)),
      ...(this.#tracking && redirect !== undefined ? { redirect } : {}),
      bcast: this.#options.bcast,
      canary: { eval: (call) => this.eval(call), poke: (keys) => this.#poke(keys) },
      canaryKey: canaryKeyOf(this.#options.canaryKey),
      handlers: this.#handlers,
      closed: () => this.#closed,
    });
  }

  /** Our own connection takes its own pushes (RESP3, NOLOOP). */
  #armSelf(): Promise<void> {
    return this.#armWith(async () => undefined);
  }

  /** Deletes `keys` from a connection other than the tracked one (ours are NOLOOP). */
  async #poke(keys: readonly string[]): Promise<void> {
    if (this.#notify !== undefined) await within(deleteKeys(this.#notify, keys), CANARY_TIMEOUT);
    else await pokeOnce(this.#cmd!, this.#socketOptions(), keys, this.#pokers);
  }

  /** The command connection's socket options (host, port, TLS), which a duplicate's `socket` replaces. */
  #socketOptions(): object {
    return (this.#cmd?.options?.['socket'] as object | undefined) ?? {};
  }

  /** A user's client redirects its pushes to our notify connection. */
  async #armRedirect(): Promise<void> {
    const notify = this.#notify;
    const cmd = this.#cmd;
    if (notify === undefined || cmd === undefined || !notify.isReady || !cmd.isReady) return;
    await this.#armWith(async () => {
      const id = await within(notify.sendCommand(['CLIENT', 'ID']), this.#recovery.limit).catch(
        (error: unknown) => {
          // Our connection does not answer (a black hole drops it silently): open a new one.
          this.#renewNotify(notify);
          throw error;
        },
      );
      return String(id);
    });
  }

  /** Gives up on the connection pushes are redirected to; the new one re-arms once ready. */
  #renewNotify(old: Client): void {
    if (this.#closed || old !== this.#notify) return;
    const notify = this.#notifyClient();
    old.destroy();
    notify.connect().then(
      () => this.#armRedirect(),
      () => {},
    );
  }

  eval(call: ScriptCall): Promise<unknown> {
    return this.#send(() => this.#eval(call));
  }

  evalThen<T>(call: ScriptCall, read: (reply: unknown) => T, fail: (error: unknown) => never): Promise<T> {
    return this.#send(() => this.#evalThen(call, read, fail));
  }

  /** #eval(call).then(read, fail) with one promise of ours (Recovery.callThen) on our own connection. */
  #evalThen<T>(call: ScriptCall, read: (reply: unknown) => T, fail: (error: unknown) => never): Promise<T> {
    const cmd = this.#cmd!;
    if (!this.#own || !cmd.isReady) return this.#eval(call).then(read, fail);
    return this.#recovery.callThen(
      () => cmd.sendCommand(evalArgs(call, true)),
      read,
      (error: unknown) => {
        if (!isNoScript(error)) return fail(error);
        return this.#command(cmd, evalArgs(call, false), true).then(read, fail);
      },
    );
  }

  /** One command through PacedSends on our own connection; a user's client gets it at once. */
  #send<T>(send: () => Promise<T>): Promise<T> {
    return this.#paced === undefined ? send() : this.#paced.send(send);
  }

  #eval(call: ScriptCall): Promise<unknown> {
    // then(), not async/await: one promise fewer on every command of every lease.
    return this.#command(this.#cmd!, evalArgs(call, true), true).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.#command(this.#cmd!, evalArgs(call, false), true);
    });
  }

  /** Every command on the command connection: watched, and raced when the client is a user's. */
  #command(cmd: Client, args: readonly string[], fresh = false): Promise<unknown> {
    if (!cmd.isReady) return Promise.reject(new NotSentError());
    // node-redis keeps the array until it writes it: a caller's own array is copied, not one
    // made for this call (`fresh`: evalArgs makes one per call).
    const own = fresh ? (args as string[]) : [...args];
    const sent = this.#recovery.call(() => cmd.sendCommand(own), !this.#own);
    // Only a user's client is ever suspect (ours are abandoned instead): no extra turn for ours.
    return this.#own ? sent : sent.then((reply) => this.#answeredAgain(reply));
  }

  /** The user's client answers again after we gave up on it: arm and verify afresh. */
  #answeredAgain<T>(reply: T): T {
    if (this.#suspect) {
      this.#suspect = false;
      void (this.#tracking ? this.#armRedirect() : this.#armWith(undefined));
    }
    return reply;
  }

  // node-redis writes the commands handed to it before its next setImmediate together: a batch
  // is one round trip.
  evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const send = () => this.#evalMany(calls);
    return this.#paced === undefined ? send() : this.#paced.sendBatch(send);
  }

  async #evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const settled = await Promise.allSettled(calls.map((call) => this.#eval(call)));
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : asError(s.reason)));
  }

  /** A RESP2 connection of our own in subscribe mode (node-redis-client.ts, subscribeOn). */
  subscribe(channel: string, handlers: SubscriptionHandlers): Subscription {
    const sub = (this.#cmd as Client).duplicate({
      RESP: 2,
      clientSideCache: undefined,
      // RESP3-only features the command connection may have on: off for a RESP2 subscriber.
      maintNotifications: 'disabled',
      socket: {
        ...this.#socketOptions(),
        connectTimeout: this.#recovery.limit,
        reconnectStrategy: this.#reconnect,
      },
    });
    return subscribeOn(sub, channel, handlers, this.#subs);
  }

  command(args: readonly string[]): Promise<unknown> {
    const cmd = this.#cmd!;
    return this.#send(() => this.#command(cmd, args));
  }

  async close(force = false): Promise<void> {
    this.#closed = true;
    this.#recovery.dog.clear();
    // A proof in flight finishes first: its poke deletes the canary keys (bounded: connect + DEL).
    if (force) this.#recovery.cut(new ConnectionClosedError());
    else await this.#sequence.canary.settle(2 * CANARY_TIMEOUT);
    for (const poker of this.#pokers) poker.destroy();
    for (const sub of this.#subs) sub.destroy();
    this.#subs.clear();
    if (!this.#own) {
      this.#cmd?.off('ready', this.#onUserReady);
      this.#cmd?.off('error', this.#onUserError);
    }
    const end = (client: Client | undefined) =>
      client &&
      closeWithin(
        () => client.close(),
        () => client.destroy(),
        force ? 0 : undefined,
      );
    await Promise.all([end(this.#own ? this.#cmd : undefined), end(this.#notify)]);
  }
}
