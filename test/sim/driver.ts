// The simulated clients (test/sim/): a driver and its subscriptions over the Links of
// network.ts, as node-redis with RESP3 tracking behaves.
import type {
  Driver,
  DriverHandlers,
  ScriptCall,
  Subscription,
  SubscriptionHandlers,
  TrackingProof,
} from '../../src/driver/types.ts';
import { NotSentError } from '../../src/driver/types.ts';
import type { MemoryClient } from '../../src/memory/backend.ts';
import { runCommand } from '../../src/memory/commands.ts';
import { Link, type SimProcess, type SimServer } from './network.ts';

interface Pending {
  sentAt: number;
  settle(reply: unknown): void;
}

/**
 * A driver over Links, as node-redis with RESP3 tracking behaves: replies and pushes share the
 * command connection; a watchdog abandons a connection that leaves a command unanswered for
 * `commandTimeout` and reconnects (tracking state starts afresh: reset()); subscriptions have a
 * connection of their own.
 */
export class SimDriver implements Driver {
  readonly tracking: boolean;
  readonly proof: TrackingProof | undefined;
  readonly server: SimServer;
  readonly process: SimProcess;
  #handlers: DriverHandlers | undefined;
  link: Link | undefined;
  #client: MemoryClient | undefined;
  readonly #outstanding = new Set<Pending>();
  #watchdog: NodeJS.Timeout | undefined;
  #closed = false;
  readonly subscriptions = new Set<SimSubscription>();

  constructor(server: SimServer, process: SimProcess, tracking: boolean) {
    this.server = server;
    this.process = process;
    this.tracking = tracking;
    this.proof = tracking ? { ok: true, rule: 'read-keys', ms: 0 } : undefined;
  }

  get connected(): boolean {
    return this.link?.alive === true;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    await new Promise<void>((resolve) => this.#open(resolve));
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const sub of this.subscriptions) await sub.close();
    this.#drop(new Error('closed'), false);
  }

  eval(call: ScriptCall): Promise<unknown> {
    this.server.net.sent([call]);
    return this.#request((client) => {
      const reply = this.#run(call, client);
      this.server.net.ran([call], [reply]);
      return reply;
    });
  }

  evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    this.server.net.sent(calls);
    return this.#request((client) => {
      const replies = calls.map((call) => {
        try {
          return this.#run(call, client);
        } catch (error) {
          return error as Error;
        }
      });
      this.server.net.ran(calls, replies);
      return replies;
    }) as Promise<unknown[]>;
  }

  command(args: readonly string[]): Promise<unknown> {
    return this.#request((client) => this.server.atomically(() => runCommand(this.server, args, client)));
  }

  readonly subscribe = (channel: string, handlers: SubscriptionHandlers): Subscription => {
    const sub = new SimSubscription(this, channel, handlers);
    this.subscriptions.add(sub);
    return sub;
  };

  /** The server closed the command connection (CLIENT KILL): the client hears of it at once. */
  kill(): void {
    const link = this.link;
    if (link === undefined || !link.alive) return;
    link.serverClosed = true;
    this.#drop(new Error('connection reset by the server'), true);
  }

  #run(call: ScriptCall, client: MemoryClient): unknown {
    const server = this.server;
    return server.atomically(() =>
      server.net.lua.run(call.script.source, call.keys, call.args, (args) =>
        runCommand(server, args, client, true),
      ),
    );
  }

  #request(run: (client: MemoryClient) => unknown): Promise<unknown> {
    const link = this.link;
    const client = this.#client;
    if (link === undefined || !link.alive || client === undefined) {
      return Promise.reject(new NotSentError());
    }
    return new Promise((resolve, reject) => {
      const pending: Pending = {
        sentAt: performance.now(),
        settle: (reply) => {
          if (!this.#outstanding.delete(pending)) return;
          if (reply instanceof Error) reject(reply);
          else resolve(reply);
        },
      };
      this.#outstanding.add(pending);
      this.#arm();
      link.toServer(() => {
        let reply: unknown;
        try {
          reply = run(client);
        } catch (error) {
          reply = error;
        }
        link.toClient(() => pending.settle(reply));
      });
    });
  }

  /** The watchdog (src/driver/watchdog.ts): the oldest command unanswered for commandTimeout. */
  #arm(): void {
    if (this.#watchdog !== undefined || this.#outstanding.size === 0) return;
    let oldest = Number.POSITIVE_INFINITY;
    for (const p of this.#outstanding) oldest = Math.min(oldest, p.sentAt);
    const wait = Math.max(1, oldest + this.server.commandTimeout - performance.now());
    this.#watchdog = setTimeout(() => {
      this.#watchdog = undefined;
      let first = Number.POSITIVE_INFINITY;
      for (const p of this.#outstanding) first = Math.min(first, p.sentAt);
      if (performance.now() - first >= this.server.commandTimeout) {
        this.server.net.log(`${this.link} abandoned: no reply for ${this.server.commandTimeout} ms`);
        this.#drop(new Error('no reply within commandTimeout: connection abandoned'), true);
      } else this.#arm();
    }, wait);
  }

  /**
   * The connection is gone: outstanding commands fail (they may or may not have run), the core
   * hears `disconnected`, and a new connection comes up after a while with tracking re-armed.
   * The old one is killed on the server once the new one is up (its late requests never run).
   */
  #drop(error: Error, reconnect: boolean): void {
    const old = this.link;
    const oldClient = this.#client;
    if (old === undefined) return;
    old.close();
    this.link = undefined;
    this.#client = undefined;
    if (this.#watchdog !== undefined) clearTimeout(this.#watchdog);
    this.#watchdog = undefined;
    for (const p of [...this.#outstanding]) p.settle(error);
    const killOld = () => {
      old.serverClosed = true;
      if (oldClient !== undefined) this.server.detach(oldClient);
    };
    if (!reconnect || this.#closed) {
      killOld();
      return;
    }
    this.#handlers?.disconnected(error);
    setTimeout(
      () => {
        if (this.#closed || this.process.crashed) return;
        this.#open(() => this.#handlers?.reset({}), killOld);
      },
      this.server.net.random.int(20, 300),
    );
  }

  #open(ready: () => void, first?: () => void): void {
    const link = new Link(this.server.net, this.process, 'cmd');
    const client: MemoryClient = {
      tracking: this.tracking,
      push: (keys) => link.toClient(() => this.#handlers?.invalidate(keys)),
    };
    this.link = link;
    this.#client = client;
    link.toServer(() => {
      first?.();
      this.server.attach(client);
      link.toClient(ready);
    });
  }
}

/** A subscription's own connection: down() when it drops, up() again once resubscribed. */
export class SimSubscription implements Subscription {
  readonly #driver: SimDriver;
  readonly #channel: string;
  readonly #handlers: SubscriptionHandlers;
  link: Link | undefined;
  #client: MemoryClient | undefined;
  #closed = false;

  constructor(driver: SimDriver, channel: string, handlers: SubscriptionHandlers) {
    this.#driver = driver;
    this.#channel = channel;
    this.#handlers = handlers;
    this.#open();
  }

  get up(): boolean {
    return this.link?.healthy === true;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#kill(false);
  }

  /**
   * The connection drops. `reconnect`: the client hears `down` and subscribes again after a while.
   * `inFlight`: messages already on their way are lost with it (they are anyway: a dead link
   * delivers nothing).
   */
  kill(): void {
    this.#kill(true);
  }

  #kill(reconnect: boolean): void {
    const link = this.link;
    const client = this.#client;
    if (link === undefined) return;
    link.close();
    link.serverClosed = true;
    this.link = undefined;
    this.#client = undefined;
    const server = this.#driver.server;
    if (client !== undefined) server.detach(client);
    if (!reconnect || this.#closed) return;
    this.#handlers.down();
    setTimeout(
      () => {
        if (!this.#closed && !this.#driver.process.crashed) this.#open();
      },
      // A client's reconnect back-off: mostly quick, at times seconds.
      server.net.random.chance(0.3) ? server.net.random.int(1_000, 6_000) : server.net.random.int(20, 500),
    );
  }

  #open(): void {
    const server = this.#driver.server;
    const link = new Link(server.net, this.#driver.process, 'sub');
    const client: MemoryClient = {
      tracking: false,
      push: () => {},
      message: (_channel, text) => {
        link.toClient(() => this.#handlers.message(text));
        if (server.net.duplicate()) link.toClient(() => this.#handlers.message(text));
      },
    };
    this.link = link;
    this.#client = client;
    link.toServer(() => {
      server.attach(client);
      server.subscribe(client, this.#channel);
      link.toClient(() => this.#handlers.up());
    });
  }
}
