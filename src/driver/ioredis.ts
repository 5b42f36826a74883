import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { within } from '../base/timeouts.ts';
import { ConnectionClosedError } from '../errors.ts';
import { Arm, canaryKeyOf } from './arm.ts';
import { CANARY_TIMEOUT } from './canary.ts';
import { connectClient, dropSocket, pokeOnce, subscribeOn } from './ioredis-client.ts';
import { loadIoredis } from './load-ioredis.ts';
import { reconnectDelay } from './node-redis-client.ts';
import { Recovery } from './recovery.ts';
import { TickWrites } from './tick-writes.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  evalArgs,
  isErrorReply,
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

const CHANNEL = '__redis__:invalidate';

/**
 * ioredis driver. ioredis drops RESP3 pushes, so tracking uses the RESP2 recipe: a subscriber
 * connection on `__redis__:invalidate`, and CLIENT TRACKING ON REDIRECT <its id> NOLOOP on the
 * command connection. Either connection coming back re-arms the pair and resets the core.
 * Every command goes through Recovery: a connection that leaves commands unanswered for
 * `commandTimeout` is dropped (ours) or given up on (a user's client).
 */
export class IoredisDriver implements Driver {
  readonly #tracking: boolean;
  /** The arm sequence and its canary (driver/arm.ts). */
  readonly #sequence = new Arm();
  /** Canary connections open right now: close() disconnects them. */
  readonly #pokers = new Set<Redis>();
  /** Subscriptions for direct grants (subscribe()). */
  readonly #subs = new Set<Redis>();
  /** A new client with the command connection's settings and `options` (set by connect()). */
  #newClient: ((options: Record<string, unknown>) => Redis) | undefined;
  #cmd: Redis | undefined;
  #sub: Redis | undefined;
  readonly #own: boolean;
  readonly #options: NodeDriverOptions;
  readonly #recovery: Recovery;
  /** A user's client was given up on: re-arm after its next answer. */
  #suspect = false;
  #handlers = NO_HANDLERS;
  #closed = false;
  #armed = false;
  #arming: Promise<void> | undefined;
  #armAgain = false;
  /** The subscriber connection's client id, once subscribed (undefined after it drops). */
  #subId: number | undefined;
  readonly #unwatch: (() => void)[] = [];
  /** Our own command connection's writes, one per turn (a caller's client is left as it is). */
  readonly #writes: TickWrites | undefined;

  /** The package our own connections are made with: ioredis, or iovalkey (its fork). */
  readonly #pkg: 'ioredis' | 'iovalkey';

  constructor(options: NodeDriverOptions, pkg: 'ioredis' | 'iovalkey' = 'ioredis') {
    this.#options = options;
    this.#pkg = pkg;
    this.#tracking = options.tracking;
    this.#own = options.client === undefined;
    this.#writes = this.#own ? new TickWrites() : undefined;
    const limit = options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT;
    this.#recovery = new Recovery(limit, (waited) => this.#stalled(waited));
  }

  /** The command connection, its socket corked until the end of this turn (TickWrites). */
  #send(): Redis {
    const cmd = this.#cmd!;
    this.#writes?.before(cmd.stream as Socket | undefined);
    return cmd;
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
    // A user's client (ioredis's or iovalkey's) makes every other connection by duplicate():
    // no package is loaded for it, so an iovalkey client works without ioredis installed.
    const RedisClass = this.#own ? await loadIoredis(this.#pkg) : undefined;
    // Fail fast while disconnected instead of queueing: the core retries on its own schedule,
    // and a queued extension would land long after it could help. Commands in flight when the
    // connection drops fail at once and are never sent again after the reconnect: ioredis's
    // default re-sends them, which replayed an abandoned acquire (an orphan key for a TTL) or an
    // acquire ahead of the re-armed tracking (a holder that never hears of its loss).
    const base = {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      connectTimeout: this.#recovery.limit,
      // ioredis counts attempts from 1: the first reconnect at once (node-redis-client.ts says why).
      // Once closed, never again: a client left reconnecting would keep the process alive.
      retryStrategy: (times: number) => (this.#closed ? null : reconnectDelay(times - 1)),
      ...(this.#options.tls === undefined ? {} : { tls: { ...this.#options.tls } }),
    } as const;
    // No auto-pipelining: its Pipeline object per batch costs more than it saves here. The
    // commands of one turn still go out together: TickWrites corks the socket until the turn ends.
    const commands = { ...base, enableAutoPipelining: false } as const;
    this.#newClient = (options) =>
      RedisClass !== undefined
        ? new RedisClass(this.#options.url, { ...base, ...options })
        : (this.#options.client as Redis).duplicate({ ...base, ...options });
    if (RedisClass !== undefined) {
      this.#cmd = new RedisClass(this.#options.url, commands);
    } else {
      this.#cmd = this.#options.client as Redis;
    }
    const cmd = this.#cmd;
    this.#watch(cmd);
    if (this.#tracking) {
      // RESP2 on purpose: ioredis 6 speaks RESP3 by default and drops RESP3 invalidation pushes,
      // while RESP2 delivers them as messages on the channel.
      const subOptions = { ...base, autoResubscribe: false, protocol: 2 } as const;
      const sub =
        RedisClass !== undefined ? new RedisClass(this.#options.url, subOptions) : cmd.duplicate(subOptions);
      this.#sub = sub;
      this.#watch(sub);
      sub.on('messageBuffer', (channel: Buffer, message: unknown) => {
        if (channel.toString() !== CHANNEL) return;
        // The payload is an array of keys, or null after FLUSHALL / FLUSHDB.
        const keys = Array.isArray(message) ? message.map((k) => String(k)) : null;
        this.#sequence.canary.hear(keys);
        this.#handlers.invalidate(keys);
      });
      await connectClient(sub);
    }
    await connectClient(cmd);
    // ioredis selects the URL's database after connecting and goes on in database 0 when the
    // server refuses it: select it here, where a refusal fails connect() as node-redis does.
    const db = Number(cmd.options.db ?? 0);
    if (this.#own && db !== 0) await cmd.select(db);
    // 'ready' started the arm already: wait for it rather than arm twice.
    await (this.#arming ?? this.#arm());
  }

  #watch(client: Redis): void {
    const commands = () => client === this.#cmd && this.#own;
    const listeners = {
      // ioredis emits 'error' for every failed (re)connect; without a listener that would crash.
      error: (error: unknown) => {
        if (!this.#closed) this.#handlers.disconnected(asError(error));
      },
      // A server-side close (CLIENT KILL, a restart) emits 'close' without 'error'.
      close: () => {
        this.#armed = false;
        if (client === this.#sub) this.#subId = undefined;
        if (commands()) this.#recovery.dropped();
        if (!this.#closed) this.#handlers.disconnected(undefined);
      },
      // The handshake (ioredis's ready check) is watched like a command: a server that accepts
      // the connection but never answers must not leave the driver waiting for 'ready'.
      connect: () => {
        if (commands()) this.#recovery.dog.sent();
      },
      ready: () => {
        if (commands()) this.#recovery.dog.answered();
        if (!this.#closed) void this.#arm();
      },
    };
    for (const [event, listener] of Object.entries(listeners)) client.on(event, listener);
    // A user's own client outlives us: take our listeners off it again on close(). Our own
    // clients keep theirs, so that a late 'error' during shutdown still has a listener.
    if (this.#own || client !== this.#cmd) return;
    this.#unwatch.push(() => {
      for (const [event, listener] of Object.entries(listeners)) client.off(event, listener);
    });
  }

  /**
   * No reply for `commandTimeout`: a stalled server or a black-holed network. Our own connection
   * is reset (ioredis reconnects, and 'ready' re-arms); a user's client is left alone. Either way
   * the connection counts as dropped, with what `onDisconnect` says that means for leases.
   */
  #stalled(waited: number): void {
    if (this.#closed) return;
    const error = this.#recovery.abandon(waited);
    this.#handlers.disconnected(error);
    if (this.#own) dropSocket(this.#cmd!);
    else this.#suspect = true;
  }

  /**
   * The subscriber's client id, subscribing it first if this connection has not been yet: in
   * subscribe mode a RESP2 connection takes no other command, so the id is asked once per
   * connection. It carries nothing else, so nothing else would notice it stopped answering:
   * a timeout drops it (ioredis reconnects, and 'ready' arms again).
   */
  async #subscribed(sub: Redis): Promise<number> {
    if (this.#subId !== undefined) return this.#subId;
    try {
      const id = (await within(sub.call('CLIENT', 'ID'), this.#recovery.limit)) as number;
      await within(sub.subscribe(CHANNEL), this.#recovery.limit);
      this.#subId = id;
      return id;
    } catch (error) {
      if (!this.#closed && !isErrorReply(error)) dropSocket(sub);
      throw error;
    }
  }

  /** Arms once at a time: a 'ready' during an arm runs it again once it is done. */
  #arm(): Promise<void> {
    if (this.#arming !== undefined) {
      this.#armAgain = true;
      return this.#arming;
    }
    this.#arming = this.#armOnce().finally(() => {
      this.#arming = undefined;
      if (this.#armAgain && !this.#closed) {
        this.#armAgain = false;
        void this.#arm();
      }
    });
    return this.#arming;
  }

  async #armOnce(): Promise<void> {
    const cmd = this.#cmd;
    if (this.#closed || cmd === undefined || cmd.status !== 'ready') return;
    const sub = this.#sub;
    if (this.#tracking && (sub === undefined || sub.status !== 'ready')) return;
    // Polling: once per connection (both connections' 'ready' land here).
    if (!this.#tracking && this.#armed) return;
    this.#armed = true;
    const send = (args: string[]) => this.#command(cmd, args);
    await this.#sequence.run({
      send,
      identify: () => this.#recovery.identify(send),
      // CLIENT ID before SUBSCRIBE: a RESP2 connection in subscribe mode takes no other command.
      ...(sub === undefined ? {} : { redirect: async () => String(await this.#subscribed(sub)) }),
      bcast: this.#options.bcast,
      canary: { eval: (call) => this.eval(call), poke: (keys) => this.#poke(keys) },
      canaryKey: canaryKeyOf(this.#options.canaryKey),
      handlers: this.#handlers,
      closed: () => this.#closed,
    });
  }

  /** Deletes `keys` from a connection other than the tracked one (ours are NOLOOP). */
  #poke(keys: readonly string[]): Promise<void> {
    return pokeOnce(this.#cmd!, keys, this.#pokers);
  }

  /** Every command on the command connection: watched, and raced when the client is a user's. */
  #command(cmd: Redis, args: readonly string[]): Promise<unknown> {
    if (cmd.status !== 'ready') return Promise.reject(new NotSentError());
    const [name, ...rest] = args;
    const sent = this.#recovery.call(() => cmd.call(name!, ...rest), !this.#own);
    // Only a user's client is ever suspect (ours are abandoned instead): no extra turn for ours.
    return this.#own ? sent : sent.then((reply) => this.#answeredAgain(reply));
  }

  /** The user's client answers again after we gave up on it: arm and verify afresh. */
  #answeredAgain<T>(reply: T): T {
    if (this.#suspect) {
      this.#suspect = false;
      this.#armed = false;
      void this.#arm();
    }
    return reply;
  }

  eval(call: ScriptCall): Promise<unknown> {
    const cmd = this.#send();
    // then(), not async/await: one promise fewer on every command of every lease.
    return this.#command(cmd, evalArgs(call, true)).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.#command(cmd, evalArgs(call, false));
    });
  }

  /** eval(call).then(read, fail) with one promise of ours (Recovery.callThen) on our own connection. */
  evalThen<T>(call: ScriptCall, read: (reply: unknown) => T, fail: (error: unknown) => never): Promise<T> {
    if (!this.#own || this.#cmd?.status !== 'ready') return this.eval(call).then(read, fail);
    const cmd = this.#send();
    const [name, ...rest] = evalArgs(call, true);
    return this.#recovery.callThen(
      () => cmd.call(name!, ...rest),
      read,
      (error: unknown) => {
        if (!isNoScript(error)) return fail(error);
        return this.#command(cmd, evalArgs(call, false)).then(read, fail);
      },
    );
  }

  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    // One call (a release, one lease's extension) is a plain command: an explicit Pipeline per
    // call costs a pile of objects that one command does not.
    if (calls.length === 1) return [await this.eval(calls[0]!).catch(asError)];
    const pipeline = this.#send().pipeline();
    for (const call of calls) {
      const [name, ...rest] = evalArgs(call, true);
      pipeline.call(name!, ...rest);
    }
    let results: [Error | null, unknown][] | null;
    try {
      if (this.#cmd!.status !== 'ready') throw new NotSentError();
      // The batch is one round trip: watched as one command.
      results = await this.#recovery.call(() => pipeline.exec(), !this.#own);
    } catch (error) {
      return calls.map(() => asError(error));
    }
    return Promise.all(
      calls.map(async (call, i) => {
        const [error, value] = results?.[i] ?? [new Error('no reply'), undefined];
        if (error === null) return value;
        if (!isNoScript(error)) return error;
        return this.eval(call).catch(asError);
      }),
    );
  }

  command(args: readonly string[]): Promise<unknown> {
    return this.#command(this.#send(), args);
  }

  /**
   * A RESP2 subscriber of our own on `channel`, with the command connection's settings,
   * re-subscribed after every reconnect (subscribeOn).
   */
  subscribe(channel: string, handlers: SubscriptionHandlers): Subscription {
    return subscribeOn(
      this.#newClient!({ autoResubscribe: false, protocol: 2 }),
      channel,
      handlers,
      this.#subs,
    );
  }

  async close(force = false): Promise<void> {
    this.#closed = true;
    this.#recovery.dog.clear();
    // A proof in flight finishes first: its poke deletes the canary keys (bounded: connect + DEL).
    if (force) this.#recovery.cut(new ConnectionClosedError());
    else await this.#sequence.canary.settle(2 * CANARY_TIMEOUT);
    for (const poker of this.#pokers) poker.disconnect();
    for (const sub of this.#subs) sub.disconnect();
    this.#subs.clear();
    for (const unwatch of this.#unwatch.splice(0)) unwatch();
    const own = this.#own ? this.#cmd : undefined;
    const sub = this.#sub;
    // ioredis ends a socket still in its TLS handshake with no 'error' listener left: the server's
    // alert was then an uncaught exception (1 close in 3 of a quorum connect that failed over TLS).
    for (const client of [own, sub]) client?.stream?.on('error', () => {});
    const end = (client: Redis | undefined) =>
      client &&
      closeWithin(
        () => client.quit(),
        () => client.disconnect(),
        force ? 0 : undefined,
      );
    await Promise.all([end(own), end(sub)]);
  }
}
