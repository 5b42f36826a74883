import type { Driver, DriverHandlers, ScriptCall } from '../driver/types.ts';
import type { MemoryBackend, MemoryClient } from './backend.ts';
import { memoryScript } from './scripts.ts';

const noHandlers: DriverHandlers = { invalidate() {}, reset() {}, disconnected() {} };

/**
 * The Driver of one Leasehold instance on a MemoryBackend: its own "connection", so tracking and
 * NOLOOP work per instance as they do per Redis connection. Replies and pushes are delivered
 * asynchronously (microtasks), as a network client's would be.
 * @internal
 */
export class MemoryDriver implements Driver {
  readonly tracking: boolean;
  readonly #store: MemoryBackend;
  readonly #client: MemoryClient;
  #handlers = noHandlers;
  #open = false;

  constructor(store: MemoryBackend, tracking: boolean) {
    this.#store = store;
    this.tracking = tracking;
    this.#client = {
      tracking,
      push: (keys) => {
        queueMicrotask(() => {
          if (this.#open) this.#handlers.invalidate(keys);
        });
      },
    };
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    this.#store.attach(this.#client);
    this.#open = true;
  }

  async close(): Promise<void> {
    this.#open = false;
    this.#store.detach(this.#client);
  }

  async eval(call: ScriptCall): Promise<unknown> {
    this.#checkOpen();
    const script = memoryScript(call.script.name);
    if (script === undefined) {
      throw new Error(`ERR the memory backend has no implementation of the script "${call.script.name}"`);
    }
    const { keys, args } = call;
    const store = this.#store;
    const client = this.#client;
    return script({
      store,
      keys,
      args,
      client,
      read: (value) => {
        for (const key of keys) store.track(key, client);
        return value;
      },
    });
  }

  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const settled = await Promise.allSettled(calls.map((call) => this.eval(call)));
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error)));
  }

  /** A few plain commands: GET, SET [NX] [PX ms], DEL, EXISTS, PTTL, PEXPIRE, PERSIST, INCR, FLUSHALL. */
  async command(args: readonly string[]): Promise<unknown> {
    this.#checkOpen();
    const [name = '', key = '', ...rest] = args;
    const store = this.#store;
    const client = this.#client;
    switch (name.toUpperCase()) {
      case 'GET':
        return store.get(key, client);
      case 'EXISTS':
        return store.get(key, client) === null ? 0 : 1;
      case 'PTTL':
        return store.pttl(key, client);
      case 'DEL':
        return store.del(key, client) ? 1 : 0;
      case 'INCR':
        return Number(store.incr(key, client));
      case 'PEXPIRE':
        return store.expire(key, Number(rest[0]), client) ? 1 : 0;
      case 'PERSIST':
        return store.expire(key, undefined, client) ? 1 : 0;
      case 'SET': {
        const [value = '', ...flags] = rest;
        const upper = flags.map((f) => f.toUpperCase());
        const px = upper.indexOf('PX');
        const options = {
          nx: upper.includes('NX'),
          ...(px >= 0 ? { px: Number(flags[px + 1]) } : {}),
        };
        return store.set(key, value, options, client) ? 'OK' : null;
      }
      case 'FLUSHALL':
      case 'FLUSHDB':
        store.flush();
        return 'OK';
      default:
        throw new Error(`ERR the memory backend does not support the command "${name}"`);
    }
  }

  #checkOpen(): void {
    if (!this.#open) throw new Error('the memory backend connection is closed');
  }
}
