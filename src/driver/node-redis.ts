import type { RedisClientType } from 'redis';
import { CANARY_TIMEOUT, Canary, defaultCanaryKey, refused } from '../notify/canary.ts';
import { preloadScripts } from '../scripts/index.ts';
import { isDefinitive, missingPackage } from './connect-errors.ts';
import { PacedSends } from './paced-sends.ts';
import { within } from './timeouts.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  evalArgs,
  isBcastOverlap,
  isErrorReply,
  isNoScript,
  NO_HANDLERS,
  type NodeDriverOptions,
  type ScriptCall,
  type TrackingProof,
  trackingOn,
} from './types.ts';

// node-redis's generic client type is a large union; the driver only uses these members.
type Client = Pick<
  RedisClientType,
  'sendCommand' | 'connect' | 'close' | 'destroy' | 'on' | 'off' | 'isReady' | 'isOpen'
> & {
  duplicate(options?: object): Client;
  options?: Record<string, unknown>;
};

/**
 * `client.connect()`, failing at once with the cause when the error cannot go away by retrying
 * (refused, unresolvable, AUTH / ACL / database index rejected): node-redis would otherwise
 * retry in the background until connect() timed out with "no answer", hiding why.
 */
async function connectClient(client: Client): Promise<void> {
  let listener: ((error: unknown) => void) | undefined;
  const definitive = new Promise<never>((_, reject) => {
    listener = (error) => {
      if (isDefinitive(error)) reject(error);
    };
    client.on('error', listener);
  });
  definitive.catch(() => {});
  try {
    await Promise.race([client.connect(), definitive]);
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    client.off('error', listener!);
  }
}

/**
 * node-redis 5/6 driver. With its own connection, RESP3 tracking runs on that same connection
 * (pushes arrive in order with replies) with NOLOOP, so this process's own extensions do not
 * wake itself. With a user's client, that client is tracked with REDIRECT to one extra RESP3
 * connection of ours, the only connection leasehold then opens.
 */
export class NodeRedisDriver implements Driver {
  readonly #tracking: boolean;
  #proof: TrackingProof | undefined;
  /** Counts proofs started: a proof overtaken by a newer one (a reconnect meanwhile) is dropped. */
  #proofs = 0;
  readonly #canary = new Canary();
  /** Canary connections open right now: close() destroys them. */
  readonly #pokers = new Set<Client>();
  #cmd: Client | undefined;
  #notify: Client | undefined;
  readonly #own: boolean;
  /** Our own connection's commands, handed to node-redis 8 per write (PacedSends says why). */
  readonly #paced: PacedSends | undefined;
  readonly #options: NodeDriverOptions;
  #handlers = NO_HANDLERS;
  #closed = false;

  constructor(options: NodeDriverOptions) {
    this.#options = options;
    this.#tracking = options.tracking;
    this.#own = options.client === undefined;
    this.#paced = this.#own ? new PacedSends() : undefined;
  }

  get tracking(): boolean {
    return this.#proof?.ok === true;
  }

  get proof(): TrackingProof | undefined {
    return this.#proof;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    const redis = await import('redis').catch((error: unknown) => {
      throw new Error(missingPackage(error, 'redis') ?? asError(error).message, { cause: error });
    });
    const pushes = this.#tracking ? { clientSideCache: this.#pushReceiver(redis) } : {};
    if (this.#own) {
      this.#cmd = redis.createClient({
        url: this.#options.url,
        RESP: 3,
        disableOfflineQueue: true,
        // node-redis 6 arms an AbortSignal.timeout per command by default (5 s): a tenth of the
        // CPU of an acquire. leasehold bounds its own waits (acquire timeouts, lease validity on
        // the monotonic clock, close()'s grace period), as it does on ioredis, which has none.
        commandOptions: { timeout: 0 },
        ...pushes,
      }) as unknown as Client;
      this.#watchConnection(this.#cmd, () => this.#armSelf());
      await connectClient(this.#cmd);
      if (this.#tracking) await this.#armSelf();
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
    // "Connected or connectable": a client not connected yet is connected here (and stays the
    // user's: close() leaves it open). Without this every command failed ("The client is
    // closed") and acquire() waited forever.
    if (!user.isOpen) await connectClient(user);
    if (!this.#tracking) return;
    this.#notify = user.duplicate({ RESP: 3, disableOfflineQueue: true, ...pushes });
    this.#watchConnection(this.#notify, () => this.#armRedirect());
    user.on('ready', this.#onUserReady);
    user.on('error', this.#onUserError);
    await connectClient(this.#notify);
    await this.#armRedirect();
  }

  #onUserReady = () => {
    void this.#armRedirect();
  };

  #onUserError = (error: unknown) => {
    if (!this.#closed) this.#handlers.disconnected(asError(error));
  };

  /**
   * Where node-redis delivers a connection's invalidation pushes: its client-side-cache hook,
   * with the caching left unused (leasehold sends raw commands, which bypass the cache). Not
   * `emitInvalidate`: that option puts CLIENT TRACKING ON into the connection handshake, and a
   * server that refuses it (an ACL without client|tracking) then fails every (re)connect, so
   * leasehold could not even fall back to polling. The handshake here runs a PING instead, and
   * leasehold arms tracking itself after every (re)connect (#armThen), where a refusal is
   * just a failed proof.
   */
  #pushReceiver(redis: typeof import('redis')): object {
    const deliver = (keys: string[] | null) => {
      this.#canary.hear(keys);
      this.#handlers.invalidate(keys);
    };
    return new (class extends redis.BasicClientSideCache {
      override trackingOn(): string[] {
        return ['PING'];
      }
      override invalidate(key: unknown): void {
        deliver(key === null ? null : [String(key)]);
      }
    })();
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
      if (this.#tracking) void rearm();
      else void this.#preload().then(() => this.#handlers.reset());
    });
  }

  /** Arms tracking on our own connection, resets the core, then proves that pushes arrive. */
  async #armSelf(): Promise<void> {
    const cmd = this.#cmd!;
    await this.#armThen(async () => {
      await this.#bcastOff(cmd);
      await cmd.sendCommand(trackingOn(undefined, this.#options.bcast)).catch(this.#raced);
    });
  }

  /**
   * `arm` enables tracking; a refusal by the server (an ACL without client|tracking, a proxy
   * without CLIENT) is a failed proof, not a dropped connection: leasehold then polls. Otherwise
   * the canary decides. The core is reset first, so that nothing waits for the proof.
   */
  async #armThen(arm: () => Promise<unknown>): Promise<void> {
    const run = ++this.#proofs;
    let proof: TrackingProof | undefined;
    try {
      await arm().catch((error: unknown) => {
        if (!isErrorReply(error)) throw error;
        proof = refused(asError(error));
      });
      await this.#preload();
      this.#handlers.reset();
    } catch (error) {
      this.#handlers.disconnected(asError(error));
      return;
    }
    proof ??= await this.#canary.prove(
      { eval: (call) => this.eval(call), poke: (keys) => this.#poke(keys) },
      (this.#options.canaryKey ?? defaultCanaryKey('leasehold'))(),
    );
    if (run !== this.#proofs || this.#closed) return;
    this.#proof = proof;
    this.#handlers.proven(proof);
  }

  /** Deletes `keys` from a connection other than the tracked one (ours are NOLOOP). */
  async #poke(keys: readonly string[]): Promise<void> {
    const write = (client: Client) => Promise.all(keys.map((key) => client.sendCommand(['DEL', key])));
    if (this.#notify !== undefined) {
      await write(this.#notify);
      return;
    }
    // One attempt, bounded: a poke that cannot connect fails the proof instead of retrying forever.
    const poker = this.#cmd!.duplicate({
      clientSideCache: undefined,
      socket: { ...this.#socketOptions(), reconnectStrategy: false, connectTimeout: CANARY_TIMEOUT },
    });
    poker.on('error', () => {});
    this.#pokers.add(poker);
    try {
      await within(poker.connect(), CANARY_TIMEOUT);
      await within(write(poker), CANARY_TIMEOUT);
    } finally {
      this.#pokers.delete(poker);
      poker.destroy();
    }
  }

  /** The command connection's socket options (host, port, TLS), which a duplicate's `socket` replaces. */
  #socketOptions(): object {
    return (this.#cmd?.options?.['socket'] as object | undefined) ?? {};
  }

  #preload(): Promise<void> {
    const cmd = this.#cmd;
    return cmd === undefined ? Promise.resolve() : preloadScripts((args) => cmd.sendCommand(args));
  }

  /** A concurrent arm already declared the same BCAST prefixes: its tracking stands. */
  readonly #raced = (error: unknown): void => {
    if (this.#options.bcast === undefined || !isBcastOverlap(error)) throw error;
  };

  /** BCAST prefixes cannot be declared twice on a connection: arming again starts afresh. */
  async #bcastOff(cmd: Client): Promise<void> {
    if (this.#options.bcast !== undefined)
      await cmd.sendCommand(['CLIENT', 'TRACKING', 'OFF']).catch(() => {});
  }

  async #armRedirect(): Promise<void> {
    const notify = this.#notify;
    const cmd = this.#cmd;
    if (notify === undefined || cmd === undefined || !notify.isReady || !cmd.isReady) return;
    await this.#armThen(async () => {
      const id = await notify.sendCommand(['CLIENT', 'ID']);
      await this.#bcastOff(cmd);
      await cmd.sendCommand(trackingOn(String(id), this.#options.bcast)).catch(this.#raced);
    });
  }

  eval(call: ScriptCall): Promise<unknown> {
    return this.#send(() => this.#eval(call));
  }

  /** One command through PacedSends on our own connection; a user's client gets it at once. */
  #send<T>(send: () => Promise<T>): Promise<T> {
    return this.#paced === undefined ? send() : this.#paced.send(send);
  }

  async #eval(call: ScriptCall): Promise<unknown> {
    const cmd = this.#cmd!;
    try {
      return await cmd.sendCommand(evalArgs(call, true));
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return cmd.sendCommand(evalArgs(call, false));
    }
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

  command(args: readonly string[]): Promise<unknown> {
    const cmd = this.#cmd!;
    return this.#send(() => cmd.sendCommand([...args]));
  }

  async close(): Promise<void> {
    this.#closed = true;
    // A proof in flight finishes first: its poke deletes the canary keys (bounded: connect + DEL).
    await this.#canary.settle(2 * CANARY_TIMEOUT);
    for (const poker of this.#pokers) poker.destroy();
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
