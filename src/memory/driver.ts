import type { Driver, DriverHandlers, ScriptCall, TrackingProof } from '../driver/types.ts';
import type { MemoryBackend, MemoryClient } from './backend.ts';
import { runCommand } from './commands.ts';
import { LuaScripts } from './lua.ts';

const noHandlers: DriverHandlers = { invalidate() {}, reset() {}, disconnected() {}, proven() {} };

/**
 * The Driver of one Leasehold instance on a MemoryBackend: its own "connection", so tracking and
 * NOLOOP work per instance as they do per Redis connection. Replies and pushes are delivered
 * asynchronously (microtasks), as a network client's would be.
 */
export class MemoryDriver implements Driver {
  readonly tracking: boolean;
  /** The store delivers every push it owes (it emulates Redis >= 7.2's rule): nothing to prove. */
  readonly proof: TrackingProof | undefined;
  readonly #store: MemoryBackend;
  readonly #client: MemoryClient;
  #handlers = noHandlers;
  #open = false;
  #lua: LuaScripts | undefined;

  constructor(store: MemoryBackend, tracking: boolean) {
    this.#store = store;
    this.tracking = tracking;
    this.proof = tracking ? { ok: true, rule: 'read-keys', ms: 0 } : undefined;
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
    this.#lua = await LuaScripts.load();
    this.#store.attach(this.#client);
    this.#open = true;
  }

  async close(): Promise<void> {
    this.#open = false;
    this.#store.detach(this.#client);
  }

  /**
   * Runs the script's own Lua source, as Redis would: its commands go to the store as this
   * connection's, so that its reads arm tracking (of exactly the keys read, as Redis >= 7.2 does)
   * and its writes skip notifying this connection (NOLOOP).
   */
  async eval(call: ScriptCall): Promise<unknown> {
    this.#checkOpen();
    const lua = this.#lua ?? (await LuaScripts.load());
    const store = this.#store;
    const client = this.#client;
    return store.atomically(() =>
      lua.run(call.script.source, call.keys, call.args, (args) => runCommand(store, args, client, true)),
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
    return runCommand(this.#store, args, this.#client);
  }

  #checkOpen(): void {
    if (!this.#open) throw new Error('the memory backend connection is closed');
  }
}
