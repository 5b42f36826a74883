import { monotonic } from '../base/clock.ts';
import { redact } from '../base/redact.ts';
import { settledWithin } from '../base/timeouts.ts';
import {
  canaryKeyIn,
  keySlot,
  type NodeEntry,
  nodeUrl,
  queryRootSlots,
  querySlots,
  redirection,
  SLOTS,
  type SlotRange,
  slotOf,
} from './cluster-topology.ts';
import { FanOut } from './fan-out.ts';
import {
  asError,
  type Driver,
  type DriverHandlers,
  type DurabilityCheck,
  evalArgs,
  NO_HANDLERS,
  type NodeDriverFactory,
  type ScriptCall,
  type Subscription,
  type SubscriptionHandlers,
  type TrackingProof,
} from './types.ts';

export interface ClusterDriverOptions {
  /** Where to ask for the slot map first; any live node of the cluster will do. */
  rootNodes: string[];
  tracking: boolean;
  /** Opens the one-node driver (node-redis or ioredis) that serves each master. */
  factory: NodeDriverFactory;
  /** Key namespace: each master's notification canary lives under it, in a slot it serves. */
  prefix?: string | undefined;
  durability?: { replicas: number; timeout: number } | undefined;
}

const MAX_REDIRECTS = 5;
/** How long a command waits for a node's first connection before trying it anyway. */
const CONNECT_WAIT = 1_000;
/** While a master in the slot map is unreachable, ask for the slot map this often. */
const REFRESH_INTERVAL = 250;
/** Replies that are final answers about the command, not about where the slot lives. */
const COMMAND_ERROR = /^(ERR|WRONGTYPE|NOSCRIPT|NOPERM|OOM|BUSY)/;

let epochs = 0;

/**
 * Redis Cluster driver: its own slot map (CLUSTER SLOTS) and one one-node driver per master,
 * each tracking with NOLOOP on its own connection and re-arming after its reconnects. A lock's
 * keys share a hash tag, so every script runs on one master. MOVED patches the map and retries;
 * ASK retries once on the named node after ASKING. A dropped master starts a refresh loop that
 * asks the other nodes for the slot map until a replica has been promoted (or the master came
 * back); every change of the map resets the core, since changes made meanwhile were never
 * pushed to anyone.
 */
export class ClusterDriver implements Driver {
  readonly durability: DurabilityCheck | undefined;
  readonly #options: ClusterDriverOptions;
  #handlers = NO_HANDLERS;
  #slots: (NodeEntry | undefined)[] = new Array(SLOTS);
  readonly #nodes = new Map<string, NodeEntry>();
  #refreshing: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** A MOVED reply patched the map since the last refresh: the next refresh resets the core. */
  #patched = false;
  #connected = false;
  #closed = false;
  /** Grant subscriptions, one connection per master each (FanOut). */
  readonly #fanOuts = new Set<FanOut>();

  constructor(options: ClusterDriverOptions) {
    this.#options = options;
    const durability = options.durability;
    this.durability =
      durability === undefined
        ? undefined
        : {
            ...durability,
            epoch: (key) => this.#slots[keySlot(key)]?.epoch ?? -1,
            wait: (key, epoch) => this.#wait(key, epoch, durability),
          };
  }

  /** Pushes are trusted only when every master's connection proved them. */
  get tracking(): boolean {
    const nodes = [...this.#nodes.values()];
    return nodes.length > 0 && nodes.every((entry) => entry.driver.tracking);
  }

  /** The first master's failed proof, else the first master's proof. */
  get proof(): TrackingProof | undefined {
    const proofs = [...this.#nodes.values()].map((entry) => entry.driver.proof);
    return proofs.find((proof) => proof?.ok === false) ?? proofs[0];
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    if (!(await this.#refresh())) {
      throw new Error(
        `no cluster node answered CLUSTER SLOTS (root nodes: ${this.#options.rootNodes.map(redact).join(', ')})`,
      );
    }
    await Promise.all([...this.#nodes.values()].map((entry) => entry.connected));
    this.#connected = true;
  }

  eval(call: ScriptCall): Promise<unknown> {
    return this.#routed(
      call.keys[0],
      (driver) => driver.eval(call),
      // ASKING holds for the next command only: both go out in this tick on the same connection,
      // and as EVAL, since an EVALSHA refused with NOSCRIPT would need a second ASKING.
      (driver) => {
        driver.command(['ASKING']).catch(() => {});
        return driver.command(evalArgs(call, false));
      },
    );
  }

  /** One pipelined round trip per master; redirected calls are retried one by one. */
  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const results: unknown[] = new Array(calls.length);
    const groups = new Map<NodeEntry, number[]>();
    for (const [i, call] of calls.entries()) {
      const entry = this.#slots[slotOf(call.keys[0])];
      if (entry === undefined) {
        results[i] = new Error('CLUSTERDOWN no master known for this slot');
        continue;
      }
      const group = groups.get(entry);
      if (group === undefined) groups.set(entry, [i]);
      else group.push(i);
    }
    await Promise.all(
      [...groups].map(async ([entry, indexes]) => {
        await entry.ready;
        let replies: unknown[];
        try {
          replies = await entry.driver.evalMany(indexes.map((i) => calls[i] as ScriptCall));
        } catch (error) {
          replies = indexes.map(() => asError(error));
        }
        await Promise.all(
          indexes.map(async (i, j) => {
            const reply = replies[j];
            if (redirection(reply) !== undefined) {
              results[i] = await this.eval(calls[i] as ScriptCall).catch(asError);
              return;
            }
            if (reply instanceof Error) this.#failed(entry, reply);
            results[i] = reply;
          }),
        );
      }),
    );
    return results;
  }

  /** A plain command, routed by its first argument (the key, for every command leasehold sends). */
  command(args: readonly string[]): Promise<unknown> {
    return this.#routed(
      args[1],
      (driver) => driver.command(args),
      (driver) => {
        driver.command(['ASKING']).catch(() => {});
        return driver.command(args);
      },
    );
  }

  sameSlot(keys: readonly string[]): boolean {
    const slot = keySlot(keys[0] ?? '');
    return keys.every((key) => keySlot(key) === slot);
  }

  scanNodes(): readonly Driver[] {
    return [...this.#nodes.values()].map((entry) => entry.driver);
  }

  /** Direct grants: `channel` on every master (FanOut says why), re-subscribed as masters come and go. */
  subscribe(channel: string, handlers: SubscriptionHandlers): Subscription {
    const fanOut = new FanOut(channel, handlers, (closed) => this.#fanOuts.delete(closed));
    this.#fanOuts.add(fanOut);
    for (const entry of this.#nodes.values()) fanOut.add(entry.driver, entry.connected);
    return fanOut;
  }

  async close(force = false): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await Promise.all([...this.#fanOuts].map((fanOut) => fanOut.close()));
    const entries = [...this.#nodes.values()];
    this.#nodes.clear();
    await Promise.all(entries.map((entry) => entry.driver.close(force).catch(() => {})));
  }

  async #routed<T>(
    key: string | undefined,
    send: (driver: Driver) => Promise<T>,
    asking: (driver: Driver) => Promise<T>,
  ): Promise<T> {
    const slot = slotOf(key);
    let entry = await this.#nodeFor(slot);
    let ask = false;
    for (let redirects = 0; ; redirects++) {
      await entry.ready;
      try {
        return await (ask ? asking(entry.driver) : send(entry.driver));
      } catch (error) {
        const redirect = redirection(error);
        if (redirect === undefined || redirects >= MAX_REDIRECTS) {
          this.#failed(entry, error);
          throw error;
        }
        ask = redirect.kind === 'ASK';
        entry = this.#entry(redirect.address);
        if (!ask) {
          // MOVED: the slot lives elsewhere for good. Patch this slot now, refresh the rest soon.
          this.#slots[slot] = entry;
          this.#patched = true;
          this.#scheduleRefresh(0);
        }
      }
    }
  }

  async #nodeFor(slot: number): Promise<NodeEntry> {
    let entry = this.#slots[slot];
    if (entry === undefined) {
      await this.#refresh();
      entry = this.#slots[slot];
    }
    if (entry === undefined) throw new Error(`CLUSTERDOWN no master known for slot ${slot}`);
    return entry;
  }

  /** A command failed on `entry`: unless Redis judged the command itself, the map may be stale. */
  #failed(entry: NodeEntry, error: unknown): void {
    if (error instanceof Error && COMMAND_ERROR.test(error.message)) return;
    if (this.#nodes.get(entry.address) === entry) this.#scheduleRefresh(0);
  }

  async #wait(
    key: string,
    epoch: number,
    durability: { replicas: number; timeout: number },
  ): Promise<number> {
    const entry = this.#slots[keySlot(key)];
    if (entry === undefined || entry.epoch !== epoch) {
      throw new Error('the connection that wrote was replaced before WAIT (reconnect or failover)');
    }
    const acked = await entry.driver.command([
      'WAIT',
      String(durability.replicas),
      String(durability.timeout),
    ]);
    return Number(acked);
  }

  // --- topology ---

  /** The entry for a master, opening its driver (in the background) the first time. */
  #entry(address: string): NodeEntry {
    const existing = this.#nodes.get(address);
    if (existing !== undefined) return existing;
    const template = this.#options.rootNodes[0] ?? 'redis://127.0.0.1';
    const driver = this.#options.factory(nodeUrl(template, address), this.#options.tracking, () =>
      this.#canaryKey(address),
    );
    const connected = driver.connect();
    const entry: NodeEntry = {
      address,
      driver,
      connected,
      ready: settledWithin(connected, CONNECT_WAIT),
      epoch: ++epochs,
      down: false,
    };
    const current = () => !this.#closed && this.#nodes.get(address) === entry;
    driver.setHandlers({
      invalidate: (keys) => {
        if (current()) this.#handlers.invalidate(keys);
      },
      reset: (info) => {
        if (!current()) return;
        entry.epoch = ++epochs;
        entry.down = false;
        const restarted = info?.restarted === true;
        this.#handlers.reset(
          restarted
            ? { restarted, since: info?.since, affects: (key) => this.#slots[keySlot(key)] === entry }
            : undefined,
        );
      },
      disconnected: (error) => {
        if (!current()) return;
        entry.epoch = ++epochs;
        entry.down = true;
        this.#handlers.disconnected(error, (key) => this.#slots[keySlot(key)] === entry);
        this.#scheduleRefresh(REFRESH_INTERVAL / 2);
      },
      proven: (proof) => {
        if (current()) this.#handlers.proven(proof);
      },
    });
    connected.then(
      () => {
        entry.down = false;
      },
      () => {
        entry.down = true;
        if (current()) this.#scheduleRefresh(REFRESH_INTERVAL);
      },
    );
    this.#nodes.set(address, entry);
    for (const fanOut of this.#fanOuts) fanOut.add(driver, connected);
    return entry;
  }

  /**
   * A canary key base in a slot `address` serves, so the proof runs on that master's own
   * connection: the first tag `canary-<i>` that hashes there (a few tries per master).
   */
  #canaryKey(address: string): string {
    return canaryKeyIn(this.#options.prefix ?? 'leasehold', (slot) => this.#slots[slot]?.address === address);
  }

  #refresh(): Promise<boolean> {
    this.#refreshing ??= this.#discover().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** Asks known masters (healthy first), then the root nodes, for the slot map. */
  async #discover(): Promise<boolean> {
    const known = [...this.#nodes.values()].sort((a, b) => Number(a.down) - Number(b.down));
    for (const entry of known) {
      const ranges = await querySlots(entry.driver, entry.address).catch(() => undefined);
      if (ranges !== undefined) return this.#apply(ranges);
    }
    for (const url of this.#options.rootNodes) {
      if (this.#closed) return false;
      const ranges = await queryRootSlots(this.#options.factory, url).catch(() => undefined);
      if (ranges !== undefined) return this.#apply(ranges);
    }
    return false;
  }

  /** Installs a slot map; closes masters that left it; resets the core when anything moved. */
  #apply(ranges: SlotRange[]): boolean {
    if (this.#closed) return false;
    const slots: (NodeEntry | undefined)[] = new Array(SLOTS);
    for (const { first, last, address } of ranges) {
      const entry = this.#entry(address);
      for (let slot = first; slot <= last && slot < SLOTS; slot++) slots[slot] = entry;
    }
    let changed = this.#patched;
    for (let slot = 0; slot < SLOTS && !changed; slot++) changed = slots[slot] !== this.#slots[slot];
    this.#slots = slots;
    this.#patched = false;
    const used = new Set(slots);
    for (const [address, entry] of this.#nodes) {
      if (used.has(entry)) continue;
      this.#nodes.delete(address);
      for (const fanOut of this.#fanOuts) fanOut.remove(entry.driver);
      void entry.driver.close().catch(() => {});
    }
    if (changed && this.#connected) this.#handlers.reset({ moved: true });
    if (this.#stale()) this.#scheduleRefresh(REFRESH_INTERVAL);
    return true;
  }

  /** Some master in the map is unreachable: a failover may be under way. */
  #stale(): boolean {
    return [...this.#nodes.values()].some((entry) => entry.down);
  }

  #scheduleRefresh(delay: number): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      const started = monotonic();
      void this.#refresh().then((ok) => {
        this.#timer = undefined;
        if (!ok || this.#stale())
          this.#scheduleRefresh(Math.max(0, REFRESH_INTERVAL - (monotonic() - started)));
      });
    }, delay);
    this.#timer.unref();
  }
}
