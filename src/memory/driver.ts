import type { Driver, DriverHandlers, ScriptCall, TrackingProof } from '../driver/types.ts';
import type { MemoryBackend, MemoryClient } from './backend.ts';
import { runCommand } from './commands.ts';
import { memoryScript } from './scripts.ts';

const noHandlers: DriverHandlers = { invalidate() {}, reset() {}, disconnected() {}, proven() {} };

/**
 * The Driver of one Leasehold instance on a MemoryBackend: its own "connection", so tracking and
 * NOLOOP work per instance as they do per Redis connection. Replies and pushes are delivered
 * asynchronously (microtasks), as a network client's would be.
 * @internal
 */
export class MemoryDriver implements Driver {
  readonly tracking: boolean;
  /** The store delivers every push it owes (it emulates Redis 7.0's rule): nothing to prove. */
  readonly proof: TrackingProof | undefined;
  readonly #store: MemoryBackend;
  readonly #client: MemoryClient;
  #handlers = noHandlers;
  #open = false;

  constructor(store: MemoryBackend, tracking: boolean) {
    this.#store = store;
    this.tracking = tracking;
    this.proof = tracking ? { ok: true, rule: 'declared-keys', ms: 0 } : undefined;
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
    // Redis 7.0: a read inside a script arms tracking of the script's declared KEYS.
    const armKeys = () => {
      for (const key of keys) store.track(key, client);
    };
    return store.atomically(() =>
      script({
        store,
        keys,
        args,
        client,
        read: (value) => {
          armKeys();
          return value;
        },
        call: (...command) => runCommand(store, command.map(String), client, armKeys),
      }),
    );
  }

  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const settled = await Promise.allSettled(calls.map((call) => this.eval(call)));
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error)));
  }

  /**
   * A plain command: the ones leasehold's scripts use (strings, hashes, sorted sets, streams,
   * TIME; see commands.ts), and FLUSHALL. A read arms tracking of the keys it read.
   */
  async command(args: readonly string[]): Promise<unknown> {
    this.#checkOpen();
    const store = this.#store;
    const client = this.#client;
    return runCommand(store, args, client, (keys) => {
      for (const key of keys) store.track(key, client);
    });
  }

  #checkOpen(): void {
    if (!this.#open) throw new Error('the memory backend connection is closed');
  }
}
