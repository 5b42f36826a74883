import type { Redis } from 'ioredis';
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

export interface IoredisDriverOptions {
  url: string;
  tracking: boolean;
  /** A user's own ioredis client: used for commands and left open on close. */
  client?: unknown;
}

const CHANNEL = '__redis__:invalidate';

/**
 * ioredis driver. ioredis drops RESP3 pushes, so tracking uses the RESP2 recipe: a subscriber
 * connection on `__redis__:invalidate`, and CLIENT TRACKING ON REDIRECT <its id> NOLOOP on the
 * command connection. Either connection coming back re-arms the pair and resets the core.
 */
export class IoredisDriver implements Driver {
  readonly tracking: boolean;
  #cmd: Redis | undefined;
  #sub: Redis | undefined;
  readonly #own: boolean;
  readonly #options: IoredisDriverOptions;
  #handlers = NO_HANDLERS;
  #closed = false;
  #armed = false;
  readonly #unwatch: (() => void)[] = [];

  constructor(options: IoredisDriverOptions) {
    this.#options = options;
    this.tracking = options.tracking;
    this.#own = options.client === undefined;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    const { Redis: RedisClass } = await import('ioredis');
    // Fail fast while disconnected instead of queueing: the core retries on its own schedule,
    // and a queued extension would land long after it could help.
    const base = { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 } as const;
    // No auto-pipelining: each command is written at once, so Redis works on the first ones
    // while this process is still issuing the rest. Batching them per tick cost less CPU per
    // acquire (23 vs 27 us) but made client and server take turns: 15% fewer acquisitions per
    // second with 64 in flight. Batches that matter (a renewal cycle, a quorum's nodes) are
    // explicit pipelines anyway (evalMany).
    const commands = { ...base, enableAutoPipelining: false } as const;
    if (this.#own) {
      this.#cmd = new RedisClass(this.#options.url, commands);
    } else {
      this.#cmd = this.#options.client as Redis;
    }
    const cmd = this.#cmd;
    this.#watch(cmd);
    if (this.tracking) {
      // RESP2 on purpose: ioredis 6 speaks RESP3 by default and drops RESP3 invalidation pushes,
      // while RESP2 delivers them as messages on the channel.
      const subOptions = { ...base, autoResubscribe: false, protocol: 2 } as const;
      const sub = this.#own ? new RedisClass(this.#options.url, subOptions) : cmd.duplicate(subOptions);
      this.#sub = sub;
      this.#watch(sub);
      sub.on('messageBuffer', (channel: Buffer, message: unknown) => {
        if (channel.toString() !== CHANNEL) return;
        // The payload is an array of keys, or null after FLUSHALL / FLUSHDB.
        if (Array.isArray(message)) this.#handlers.invalidate(message.map((k) => String(k)));
        else this.#handlers.invalidate(null);
      });
      await sub.connect();
    }
    if (this.#own) await cmd.connect();
    else if (cmd.status === 'wait') await cmd.connect();
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
    if (!this.tracking) {
      if (!this.#armed) {
        this.#armed = true;
        await preloadScripts((args) => cmd.call(args[0]!, ...args.slice(1)));
        this.#handlers.reset();
      }
      return;
    }
    const sub = this.#sub;
    if (sub === undefined || sub.status !== 'ready') return;
    try {
      // CLIENT ID before SUBSCRIBE: a RESP2 connection in subscribe mode takes no other command.
      const id = (await sub.call('CLIENT', 'ID')) as number;
      await sub.subscribe(CHANNEL);
      await cmd.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(id), 'NOLOOP');
      await preloadScripts((args) => cmd.call(args[0]!, ...args.slice(1)));
      this.#armed = true;
      this.#handlers.reset();
    } catch (error) {
      this.#handlers.disconnected(asError(error));
    }
  }

  async eval(call: ScriptCall): Promise<unknown> {
    const cmd = this.#cmd!;
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
    const pipeline = this.#cmd!.pipeline();
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
    return this.#cmd!.call(name!, ...rest);
  }

  async close(): Promise<void> {
    this.#closed = true;
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
