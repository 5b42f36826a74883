import { once } from 'node:events';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { CANARY_TIMEOUT, Canary, defaultCanaryKey, refused } from '../notify/canary.ts';
import { preloadScripts } from '../scripts/index.ts';
import { missingPackage } from './connect-errors.ts';
import { TickWrites } from './tick-writes.ts';
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

/**
 * Connects `client` (or waits for a connect under way), failing with the error the client
 * reported (ECONNREFUSED, ENOTFOUND, WRONGPASS...) rather than ioredis's "Connection is closed.",
 * which says nothing about why.
 */
async function connectClient(client: Redis): Promise<void> {
  if (client.status === 'ready') return;
  let reported: unknown;
  const onError = (error: unknown) => {
    reported ??= error;
  };
  client.on('error', onError);
  try {
    if (client.status === 'wait') await client.connect();
    else await once(client, 'ready');
  } catch (error) {
    throw reported ?? error;
  } finally {
    client.off('error', onError);
  }
}

const CHANNEL = '__redis__:invalidate';

/**
 * ioredis driver. ioredis drops RESP3 pushes, so tracking uses the RESP2 recipe: a subscriber
 * connection on `__redis__:invalidate`, and CLIENT TRACKING ON REDIRECT <its id> NOLOOP on the
 * command connection. Either connection coming back re-arms the pair and resets the core.
 */
export class IoredisDriver implements Driver {
  readonly #tracking: boolean;
  #proof: TrackingProof | undefined;
  /** Counts proofs started: a proof overtaken by a newer one (a reconnect meanwhile) is dropped. */
  #proofs = 0;
  readonly #canary = new Canary();
  /** Canary connections open right now: close() disconnects them. */
  readonly #pokers = new Set<Redis>();
  #cmd: Redis | undefined;
  #sub: Redis | undefined;
  readonly #own: boolean;
  readonly #options: NodeDriverOptions;
  #handlers = NO_HANDLERS;
  #closed = false;
  #armed = false;
  readonly #unwatch: (() => void)[] = [];
  /** Our own command connection's writes, one per turn (a caller's client is left as it is). */
  readonly #writes: TickWrites | undefined;

  constructor(options: NodeDriverOptions) {
    this.#options = options;
    this.#tracking = options.tracking;
    this.#own = options.client === undefined;
    this.#writes = this.#own ? new TickWrites() : undefined;
  }

  /** The command connection, its socket corked until the end of this turn (TickWrites). */
  #send(): Redis {
    const cmd = this.#cmd!;
    this.#writes?.before(cmd.stream as Socket | undefined);
    return cmd;
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
    const { Redis: RedisClass } = await import('ioredis').catch((error: unknown) => {
      throw new Error(missingPackage(error, 'ioredis') ?? asError(error).message, { cause: error });
    });
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
    } as const;
    // No auto-pipelining: its Pipeline object per batch cost more than it saved (15% fewer
    // acquisitions per second with 64 in flight). The commands of one turn still go out in one
    // write: TickWrites corks the socket until the turn ends.
    const commands = { ...base, enableAutoPipelining: false } as const;
    if (this.#own) {
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
      const sub = this.#own ? new RedisClass(this.#options.url, subOptions) : cmd.duplicate(subOptions);
      this.#sub = sub;
      this.#watch(sub);
      sub.on('messageBuffer', (channel: Buffer, message: unknown) => {
        if (channel.toString() !== CHANNEL) return;
        // The payload is an array of keys, or null after FLUSHALL / FLUSHDB.
        const keys = Array.isArray(message) ? message.map((k) => String(k)) : null;
        this.#canary.hear(keys);
        this.#handlers.invalidate(keys);
      });
      await connectClient(sub);
    }
    await connectClient(cmd);
    // ioredis selects the URL's database after connecting and goes on in database 0 when the
    // server refuses it: select it here, where a refusal fails connect() as node-redis does.
    const db = Number(cmd.options.db ?? 0);
    if (this.#own && db !== 0) await cmd.select(db);
    await this.#arm();
  }

  #watch(client: Redis): void {
    const listeners = {
      // ioredis emits 'error' for every failed (re)connect; without a listener that would crash.
      error: (error: unknown) => {
        if (!this.#closed) this.#handlers.disconnected(asError(error));
      },
      // A server-side close (CLIENT KILL, a restart) emits 'close' without 'error'.
      close: () => {
        this.#armed = false;
        if (!this.#closed) this.#handlers.disconnected(undefined);
      },
      ready: () => {
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

  async #arm(): Promise<void> {
    const cmd = this.#cmd;
    if (cmd === undefined || cmd.status !== 'ready') return;
    if (!this.#tracking) {
      if (!this.#armed) {
        this.#armed = true;
        await preloadScripts((args) => cmd.call(args[0]!, ...args.slice(1)));
        this.#handlers.reset();
      }
      return;
    }
    const sub = this.#sub;
    if (sub === undefined || sub.status !== 'ready') return;
    const run = ++this.#proofs;
    let proof: TrackingProof | undefined;
    try {
      // CLIENT ID before SUBSCRIBE: a RESP2 connection in subscribe mode takes no other command.
      const id = (await sub.call('CLIENT', 'ID')) as number;
      await sub.subscribe(CHANNEL);
      // A refusal by the server (an ACL without client|tracking, a proxy without CLIENT) is a
      // failed proof, not a dropped connection: leasehold then polls.
      // BCAST prefixes cannot be declared twice on a connection ("overlaps with an existing
      // prefix"), and this runs again whenever either connection comes back: start afresh.
      if (this.#options.bcast !== undefined) await cmd.call('CLIENT', 'TRACKING', 'OFF').catch(() => {});
      const [, ...args] = trackingOn(String(id), this.#options.bcast);
      await cmd.call('CLIENT', ...args).catch((error: unknown) => {
        if (!isErrorReply(error)) throw error;
        if (this.#options.bcast !== undefined && isBcastOverlap(error)) return;
        proof = refused(asError(error));
      });
      await preloadScripts((args) => cmd.call(args[0]!, ...args.slice(1)));
      this.#armed = true;
      // Reset before the proof, so that nothing waits for it.
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
    // One attempt, bounded: a poke that cannot connect fails the proof instead of retrying forever.
    const poker = this.#cmd!.duplicate({
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
      connectTimeout: CANARY_TIMEOUT,
    });
    poker.on('error', () => {});
    this.#pokers.add(poker);
    try {
      await within(poker.connect(), CANARY_TIMEOUT);
      await within(Promise.all(keys.map((key) => poker.del(key))), CANARY_TIMEOUT);
    } finally {
      this.#pokers.delete(poker);
      poker.disconnect();
    }
  }

  async eval(call: ScriptCall): Promise<unknown> {
    const cmd = this.#send();
    const [name, ...rest] = evalArgs(call, true);
    try {
      return await cmd.call(name!, ...rest);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      const [evalName, ...evalRest] = evalArgs(call, false);
      return cmd.call(evalName!, ...evalRest);
    }
  }

  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    // One call (a release, one lease's extension) is a plain command: an explicit Pipeline per
    // call costs a pile of objects (it halved the throughput of acquire + release).
    if (calls.length === 1) return [await this.eval(calls[0]!).catch(asError)];
    const pipeline = this.#send().pipeline();
    for (const call of calls) {
      const [name, ...rest] = evalArgs(call, true);
      pipeline.call(name!, ...rest);
    }
    let results: [Error | null, unknown][] | null;
    try {
      results = await pipeline.exec();
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
    const [name, ...rest] = args;
    return this.#send().call(name!, ...rest);
  }

  async close(): Promise<void> {
    this.#closed = true;
    // A proof in flight finishes first: its poke deletes the canary keys (bounded: connect + DEL).
    await this.#canary.settle(2 * CANARY_TIMEOUT);
    for (const poker of this.#pokers) poker.disconnect();
    for (const unwatch of this.#unwatch.splice(0)) unwatch();
    const own = this.#own ? this.#cmd : undefined;
    const sub = this.#sub;
    await Promise.all([
      own &&
        closeWithin(
          () => own.quit(),
          () => own.disconnect(),
        ),
      sub &&
        closeWithin(
          () => sub.quit(),
          () => sub.disconnect(),
        ),
    ]);
  }
}
