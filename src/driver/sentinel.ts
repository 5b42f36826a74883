import { redact } from '../base/redact.ts';
import { settledWithin, within } from '../base/timeouts.ts';
import { joinAddress, nodeUrl } from './cluster-topology.ts';
import { FanOut } from './fan-out.ts';
import type { Subscribe } from './subscriber.ts';
import {
  type Driver,
  type DriverHandlers,
  type DurabilityCheck,
  NO_HANDLERS,
  type NodeDriverFactory,
  type ScriptCall,
  type Subscription,
  type SubscriptionHandlers,
  type TrackingProof,
} from './types.ts';

export interface SentinelDriverOptions {
  /** The master name the sentinels monitor (`sentinel monitor <name> ...`). */
  name: string;
  /** Sentinel URLs, asked in turn. */
  sentinels: string[];
  tracking: boolean;
  /** Opens the one-node driver (node-redis or ioredis) for the master and for each sentinel. */
  factory: NodeDriverFactory;
  /** Names the master's notification canary keys. */
  canaryKey?: (() => string) | undefined;
  /** Subscribes to `+switch-master` on every sentinel: a failover is followed when announced. */
  subscribe?: Subscribe | undefined;
  durability?: { replicas: number; timeout: number } | undefined;
}

/** The current master and the driver (one connection, tracking with NOLOOP) leasehold holds to it. */
interface Master {
  readonly address: string;
  readonly driver: Driver;
  /** Changes on every reconnect and drop: WAIT must go to the connection that wrote. */
  epoch: number;
  healthy: boolean;
}

/** How long one sentinel may take to answer before the next one is asked. */
const QUERY_TIMEOUT = 1_000;
/** While the master is unreachable, ask the sentinels this often. */
const FOLLOW_INTERVAL = 250;

let epochs = 0;

/**
 * Sentinel driver: asks the sentinels for the master's address, holds one one-node driver to it
 * (tracking with NOLOOP, re-armed after its reconnects) and checks ROLE before trusting it. When
 * the master connection drops or answers READONLY (it was demoted), it asks the sentinels every
 * 250 ms until they name a master that answers; switching to it resets the core, since the
 * writes of the failover window were never pushed to anyone and async replication may have
 * lost some.
 */
export class SentinelDriver implements Driver {
  readonly durability: DurabilityCheck | undefined;
  readonly #options: SentinelDriverOptions;
  #handlers = NO_HANDLERS;
  #master: Master | undefined;
  readonly #sentinels = new Map<string, { driver: Driver; ready: Promise<void> }>();
  /** The sentinel that answered last is asked first next time. */
  #preferred = 0;
  #timer: NodeJS.Timeout | undefined;
  #following: Promise<void> | undefined;
  #subscriptions: { close(): Promise<void> }[] = [];
  /** Grant subscriptions, on the current master's connection, moved with it (FanOut). */
  readonly #fanOuts = new Set<FanOut>();
  #closed = false;

  constructor(options: SentinelDriverOptions) {
    this.#options = options;
    const durability = options.durability;
    this.durability =
      durability === undefined
        ? undefined
        : {
            ...durability,
            epoch: () => this.#master?.epoch ?? -1,
            wait: (_key, epoch) => this.#wait(epoch, durability),
          };
  }

  /** Whether the current master's connection proved its pushes. */
  get tracking(): boolean {
    return this.#master?.driver.tracking ?? false;
  }

  get proof(): TrackingProof | undefined {
    return this.#master?.driver.proof;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  /** Retries until a master answers; Leasehold.connect() bounds it with `connectTimeout`. */
  async connect(): Promise<void> {
    let lastError: unknown;
    while (!this.#closed) {
      try {
        const address = await this.#ask();
        this.#master = await this.#open(address);
        this.#announcements();
        return;
      } catch (error) {
        lastError = error;
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL).unref());
      }
    }
    throw lastError instanceof Error ? lastError : new Error('closed while connecting');
  }

  eval(call: ScriptCall): Promise<unknown> {
    return this.#send((driver) => driver.eval(call));
  }

  evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    return this.#send(async (driver) => {
      const results = await driver.evalMany(calls);
      return results.map((result) => (result instanceof Error ? this.#demoted(result) : result));
    });
  }

  command(args: readonly string[]): Promise<unknown> {
    return this.#send((driver) => driver.command(args));
  }

  /**
   * Direct grants: `channel` on the current master, moved to the new one on a switch. Messages are
   * hints (Subscription.hints): a master replicates PUBLISH to its replicas, so a grant undone on
   * the new master can still reach a subscription left on the old one.
   */
  subscribe(channel: string, handlers: SubscriptionHandlers): Subscription {
    const fanOut = new FanOut(channel, handlers, (closed) => this.#fanOuts.delete(closed));
    this.#fanOuts.add(fanOut);
    if (this.#master !== undefined) fanOut.add(this.#master.driver, Promise.resolve());
    return fanOut;
  }

  async close(force = false): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const drivers = [this.#master?.driver, ...[...this.#sentinels.values()].map((s) => s.driver)];
    this.#master = undefined;
    this.#sentinels.clear();
    const subscriptions = this.#subscriptions.splice(0);
    const fanOuts = [...this.#fanOuts];
    await Promise.all([
      ...fanOuts.map((fanOut) => fanOut.close()),
      ...drivers.map((driver) => driver?.close(force).catch(() => {})),
      ...subscriptions.map((subscription) => subscription.close().catch(() => {})),
    ]);
  }

  async #send<T>(fn: (driver: Driver) => Promise<T>): Promise<T> {
    const master = this.#master;
    if (master === undefined) throw new Error('no master known yet (sentinel)');
    try {
      return await fn(master.driver);
    } catch (error) {
      throw this.#demoted(error);
    }
  }

  /**
   * READONLY means the node we write to is a replica now: look for the new master, and report
   * the error as "unavailable" (retried) instead of as a refused command.
   */
  #demoted(error: unknown): unknown {
    if (!(error instanceof Error) || !error.message.startsWith('READONLY')) return error;
    this.#follow(0);
    return new Error(`the master was demoted, following the sentinels (${error.message})`, { cause: error });
  }

  async #wait(epoch: number, durability: { replicas: number; timeout: number }): Promise<number> {
    const master = this.#master;
    if (master === undefined || master.epoch !== epoch) {
      throw new Error('the connection that wrote was replaced before WAIT (reconnect or failover)');
    }
    const acked = await master.driver.command([
      'WAIT',
      String(durability.replicas),
      String(durability.timeout),
    ]);
    return Number(acked);
  }

  // --- following the master ---

  /**
   * A failover announced by the sentinels (`+switch-master <name> <old> <port> <new> <port>`).
   * Needed because a manual or partial failover can leave the old master running, and writable,
   * for seconds before the sentinels demote it: nothing would drop our connection meanwhile.
   */
  #announcements(): void {
    const subscribe = this.#options.subscribe;
    if (subscribe === undefined || this.#subscriptions.length > 0) return;
    let subscribed = 0;
    for (const url of this.#options.sentinels) {
      this.#subscriptions.push(
        subscribe(url, '+switch-master', {
          message: (text) => {
            if (text.split(' ')[0] === this.#options.name) this.#follow(0);
          },
          // After a reconnect of the subscription an announcement may have been missed.
          ready: () => {
            if (++subscribed > this.#options.sentinels.length) this.#follow(0);
          },
        }),
      );
    }
  }

  /** The master's `host:port` as the first sentinel that answers reports it. */
  async #ask(): Promise<string> {
    const urls = this.#options.sentinels;
    const errors: string[] = [];
    for (let n = 0; n < urls.length; n++) {
      const i = (this.#preferred + n) % urls.length;
      const url = urls[i] as string;
      try {
        const sentinel = this.#sentinel(url);
        await sentinel.ready;
        const reply = await within(
          sentinel.driver.command(['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.#options.name]),
          QUERY_TIMEOUT,
        );
        if (!Array.isArray(reply) || reply.length < 2) {
          throw new Error(`does not know a master named "${this.#options.name}"`);
        }
        this.#preferred = i;
        return joinAddress(String(reply[0]), Number(reply[1]));
      } catch (error) {
        errors.push(`${redact(url)}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    throw new Error(`no sentinel named the master: ${errors.join('; ')}`);
  }

  #sentinel(url: string): { driver: Driver; ready: Promise<void> } {
    const existing = this.#sentinels.get(url);
    if (existing !== undefined) return existing;
    const driver = this.#options.factory(url, false);
    const connected = driver.connect();
    const entry = { driver, ready: settledWithin(connected, QUERY_TIMEOUT) };
    connected.catch(() => {
      // A client that gave up connecting is replaced on the next question.
      if (this.#sentinels.get(url) === entry) this.#sentinels.delete(url);
      void driver.close().catch(() => {});
    });
    this.#sentinels.set(url, entry);
    return entry;
  }

  /** Connects to `address` and checks that it is a master indeed (sentinels can be a step behind). */
  async #open(address: string): Promise<Master> {
    const template = this.#options.sentinels[0] ?? 'redis://127.0.0.1';
    const driver = this.#options.factory(
      nodeUrl(template, address),
      this.#options.tracking,
      this.#options.canaryKey,
    );
    const master: Master = { address, driver, epoch: ++epochs, healthy: false };
    let first = true;
    const current = () => !this.#closed && this.#master === master;
    driver.setHandlers({
      invalidate: (keys) => {
        if (current()) this.#handlers.invalidate(keys);
      },
      reset: (info) => {
        master.epoch = ++epochs;
        master.healthy = true;
        if (!current()) return;
        this.#handlers.reset(info);
        // Back after a drop: a restarted old master may be about to be demoted. Ask once.
        if (!first) this.#follow(0);
      },
      disconnected: (error) => {
        master.epoch = ++epochs;
        master.healthy = false;
        if (!current()) return;
        this.#handlers.disconnected(error);
        this.#follow(FOLLOW_INTERVAL / 2);
      },
      proven: (proof) => {
        if (current()) this.#handlers.proven(proof);
      },
    });
    try {
      await within(driver.connect(), QUERY_TIMEOUT * 2);
      const role = await within(driver.command(['ROLE']), QUERY_TIMEOUT);
      const kind = Array.isArray(role) ? String(role[0]) : String(role);
      if (kind !== 'master') throw new Error(`${address} answers ROLE ${kind}, not master`);
    } catch (error) {
      await driver.close().catch(() => {});
      throw error;
    }
    first = false;
    master.healthy = true;
    return master;
  }

  /** Asks the sentinels after `delay`, and again every FOLLOW_INTERVAL until a master answers. */
  #follow(delay: number): void {
    if (this.#closed || this.#timer !== undefined || this.#following !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#following = this.#step().finally(() => {
        this.#following = undefined;
      });
    }, delay);
    this.#timer.unref();
  }

  async #step(): Promise<void> {
    const current = this.#master;
    let settled = false;
    try {
      const address = await this.#ask();
      if (this.#closed) return;
      if (current !== undefined && address === current.address) {
        settled = current.healthy;
      } else {
        const next = await this.#open(address);
        if (this.#closed || this.#master !== current) {
          await next.driver.close().catch(() => {});
          return;
        }
        this.#master = next;
        settled = true;
        for (const fanOut of this.#fanOuts) {
          if (current !== undefined) fanOut.remove(current.driver);
          fanOut.add(next.driver, Promise.resolve());
        }
        void current?.driver.close().catch(() => {});
        this.#handlers.reset({ moved: true });
        // The new master's connection was proven while it was opened: `tracking` may differ.
        const proof = next.driver.proof;
        if (proof !== undefined) this.#handlers.proven(proof);
      }
    } catch {
      // No sentinel answered, or the named master did not: try again shortly.
    }
    if (!settled && !this.#closed) {
      this.#following = undefined;
      this.#follow(FOLLOW_INTERVAL);
    }
  }
}
