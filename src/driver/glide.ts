import type {
  ClusterScanCursor,
  GlideClient,
  GlideClientConfiguration,
  GlideClusterClient,
} from '@valkey/valkey-glide';
import { monotonic } from '../base/clock.ts';
import { ConnectionClosedError } from '../errors.ts';
import { preloadScripts } from '../scripts/index.ts';
import { keySlot } from './cluster-topology.ts';
import { connectError, glideConfig, loadGlide, serverError } from './glide-config.ts';
import { Watch } from './glide-watch.ts';
import { Recovery } from './recovery.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  evalArgs,
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

type Client = GlideClient | GlideClusterClient;

/**
 * Why an instance on Valkey GLIDE polls: GLIDE reads RESP3 pushes itself and hands its user only
 * pub/sub messages (an `invalidate` push is logged as unknown), and it reconnects without telling
 * anyone or re-issuing a user's CLIENT TRACKING, so no arrangement of leasehold's can prove that
 * pushes keep arriving (docs/compatibility.md, "Valkey GLIDE").
 */
export const GLIDE_POLLS =
  'Valkey GLIDE hands its user no invalidation pushes and re-arms no tracking after its silent reconnects';

/**
 * Valkey GLIDE driver (`@valkey/valkey-glide` 2.x). Scripts and commands go through
 * `customCommand` (EVALSHA, EVAL when the server does not know the script); an instance polls
 * (GLIDE_POLLS). Beside its own GLIDE client it keeps a Watch: a RESP2 subscriber connection
 * that says at once when the server dies, restarts or resets the connection (GLIDE reconnects
 * without telling), so that leases behind it are lost then and not at their next extension, and
 * that carries the instance's direct grants: a release PUBLISHes the grant on the waiter's
 * channel, so a handoff does not wait for the next poll. With a user's client (standalone or
 * Cluster) leasehold opens no connection of its own: no Watch, no grants, waiters poll every
 * retryDelay, and a restart is noticed by the next call. On a Cluster given as
 * `cluster: { rootNodes }`, leasehold's own Cluster driver runs one of these per master.
 *
 * Every command goes through Recovery: our own client, left without a reply for
 * `commandTimeout`, is closed and replaced (GLIDE cannot drop just its socket); a user's client
 * stays theirs, and only our calls on it fail.
 */
export class GlideDriver implements Driver {
  readonly tracking = false;
  readonly #options: NodeDriverOptions;
  readonly #own: boolean;
  readonly #recovery: Recovery;
  #glide: typeof import('@valkey/valkey-glide') | undefined;
  #config: GlideClientConfiguration | undefined;
  #cmd: Client | undefined;
  #watch: Watch | undefined;
  /** The Watch dropped: the next `up` re-arms (the server may have restarted empty). */
  #down = false;
  /** A replacement client is being made (after a stall): commands are not sent meanwhile. */
  #replacing: Promise<void> | undefined;
  #proof: TrackingProof | undefined;
  #handlers = NO_HANDLERS;
  #closed = false;
  /** Grant subscriptions by channel (subscribe()). */
  readonly #subs = new Map<string, SubscriptionHandlers>();
  readonly #scans = new ClusterScans();
  /** The Watch was refused (an ACL without the channel): no grants. */
  #unwatched = false;
  /** A user's Cluster client: one script takes keys of one slot only. */
  readonly sameSlot: ((keys: readonly string[]) => boolean) | undefined;

  constructor(options: NodeDriverOptions) {
    this.#options = options;
    this.#own = options.client === undefined;
    this.sameSlot = isCluster(options.client)
      ? (keys) => keys.every((key) => keySlot(key) === keySlot(keys[0] ?? ''))
      : undefined;
    const limit = options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT;
    this.#recovery = new Recovery(limit, (waited) => this.#stalled(waited));
  }

  get proof(): TrackingProof | undefined {
    return this.#proof;
  }

  /**
   * Direct grants ride on the Watch: only when leasehold opens the connections, and not once an
   * ACL refused the Watch (inspection then says waiters are not recorded, rather than "none").
   */
  get subscribe(): ((channel: string, handlers: SubscriptionHandlers) => Subscription) | undefined {
    return this.#own && !this.#unwatched
      ? (channel, handlers) => this.#subscribe(channel, handlers)
      : undefined;
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    this.#glide = await loadGlide();
    if (this.#own) {
      this.#config = glideConfig(this.#options, this.#recovery.limit);
      // The Watch first: GLIDE reports every failure to connect as "timed out" once its
      // connection timeout has passed, where the Watch's socket fails at once with the reason
      // (ECONNREFUSED, ENOTFOUND, WRONGPASS, a database the server does not have).
      this.#watch = new Watch(
        this.#options.url,
        this.#options.tls,
        {
          up: () => this.#watchUp(),
          down: (error) => this.#watchDown(error),
          message: (channel, text) => this.#subs.get(channel)?.message(text),
          subscribed: (channel) => this.#subs.get(channel)?.up(),
        },
        this.#recovery.limit,
      );
      await this.#watch.start().catch((error: unknown) => {
        // An ACL without +subscribe or the channel: go on without the Watch (no grants, and a
        // restart is noticed by the next call), as the other drivers go on without pushes.
        if (!/^NOPERM/.test(asError(error).message)) throw error;
        this.#watch?.close();
        this.#watch = undefined;
        this.#unwatched = true;
      });
      const made = await this.#glide.GlideClient.createClient(this.#config).catch((error: unknown) => {
        throw connectError(error);
      });
      // connect() gave up meanwhile (connectTimeout) and closed us: this client is no one's.
      if (this.#closed) {
        made.close();
        throw new NotSentError();
      }
      this.#cmd = made;
    } else {
      this.#cmd = this.#options.client as Client;
    }
    await this.#arm();
    // Told after connect's own reset: with notifications 'tracking' this refuses the connect.
    if (this.#options.tracking) {
      this.#proof = { ok: false, reason: new Error(GLIDE_POLLS) };
      this.#handlers.proven(this.#proof);
    }
  }

  /** What every driver runs on a (new) connection: identify the server, load the scripts, reset. */
  async #arm(): Promise<void> {
    const send = (args: string[]) => this.command(args);
    const since = monotonic();
    const restarted = await this.#recovery.identify(send);
    await preloadScripts(send);
    this.#handlers.reset(restarted ? { restarted, since } : undefined);
  }

  #watchDown(error: Error): void {
    if (this.#closed) return;
    this.#down = true;
    this.#recovery.cut(error);
    for (const sub of this.#subs.values()) sub.down();
    this.#handlers.disconnected(error);
  }

  /**
   * The Watch is back after a drop: re-arm through GLIDE, which reconnects on its own schedule
   * (its calls may fail a while yet). Tried until it works, the Watch drops again, or close().
   */
  async #watchUp(): Promise<void> {
    if (!this.#down) return;
    this.#down = false;
    for (let attempt = 0; !this.#closed && !this.#down; attempt++) {
      try {
        await this.#arm();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 20 * 2 ** attempt)).unref());
      }
    }
  }

  /**
   * No reply for `commandTimeout`: a stalled server or a black-holed network. Our own client is
   * closed and replaced (its calls fail now, a new one connects in the background); a user's
   * client is left alone. Either way the connection counts as dropped.
   */
  #stalled(waited: number): void {
    if (this.#closed) return;
    this.#handlers.disconnected(this.#recovery.abandon(waited));
    if (!this.#own || this.#replacing !== undefined) return;
    const old = this.#cmd;
    this.#cmd = undefined;
    old?.close();
    this.#replacing = this.#replace().finally(() => {
      this.#replacing = undefined;
    });
  }

  /** Connects a new client of ours until one answers (or close()). */
  async #replace(): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      try {
        const client = await this.#glide!.GlideClient.createClient(this.#config!);
        if (this.#closed) {
          client.close();
          return;
        }
        this.#cmd = client;
        await this.#arm();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)).unref());
      }
    }
  }

  command(args: readonly string[]): Promise<unknown> {
    const cmd = this.#cmd;
    // While the Watch is down the server is gone or restarting: fail at once, as node-redis and
    // ioredis do while reconnecting, rather than wait in GLIDE's queue for its reconnect.
    if (cmd === undefined || this.#closed || this.#down) return Promise.reject(new NotSentError());
    const send =
      args[0] === 'SCAN' && isCluster(cmd)
        ? () => this.#scans.scan(this.#glide!, cmd, args)
        : () => routed(this.#glide!, cmd, args);
    // Raced, our own client's calls too: GLIDE holds a call while it reconnects, and Recovery
    // fails it when the Watch drops or the watchdog gives the connection up.
    const sent = this.#recovery.call(send, true);
    return sent.catch((error: unknown) => {
      throw serverError(error);
    });
  }

  async eval(call: ScriptCall): Promise<unknown> {
    try {
      return await this.command(evalArgs(call, true));
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.command(evalArgs(call, false));
    }
  }

  /** GLIDE pipelines the commands of one turn on its connection by itself: one call each. */
  evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    return Promise.all(calls.map((call) => this.eval(call).catch(asError)));
  }

  /** `channel` on the Watch, which re-subscribes it after every reconnect. */
  #subscribe(channel: string, handlers: SubscriptionHandlers): Subscription {
    this.#subs.set(channel, handlers);
    this.#watch?.subscribe(channel);
    return {
      close: async () => {
        this.#subs.delete(channel);
        this.#watch?.unsubscribe(channel);
      },
    };
  }

  async close(force = false): Promise<void> {
    this.#closed = true;
    this.#recovery.dog.clear();
    // GLIDE keeps a call pending while it reconnects: destroy() fails them now.
    if (force) this.#recovery.cut(new ConnectionClosedError());
    this.#watch?.close();
    this.#subs.clear();
    const own = this.#own ? this.#cmd : undefined;
    // GLIDE's close() is its only way out: it fails what is pending and drops the connection.
    if (own !== undefined)
      await closeWithin(
        async () => own.close(),
        () => {},
        force ? 0 : undefined,
      );
  }
}

/**
 * One command, its replies decoded as strings whatever the client's default decoder is (a user's
 * may hand out Buffers). A Cluster client routes it by its first key (a script's KEYS, a key
 * command's key); SCRIPT LOAD goes to every primary, the other keyless ones (INFO, CLIENT ID,
 * PING) to one.
 */
function routed(glide: typeof import('@valkey/valkey-glide'), client: Client, args: readonly string[]) {
  const decoder = glide.Decoder.String;
  if (!isCluster(client)) return (client as GlideClient).customCommand([...args], { decoder });
  const key = firstKey(args);
  if (key !== undefined) {
    return client.customCommand([...args], { decoder, route: { type: 'primarySlotKey', key } });
  }
  if (args[0] !== 'SCRIPT') return client.customCommand([...args], { decoder, route: 'randomNode' });
  // Routed to every primary, the reply is a map by node: any node's answer (the SHA) will do.
  return client
    .customCommand([...args], { decoder, route: 'allPrimaries' })
    .then((reply) =>
      reply !== null && typeof reply === 'object' && !Array.isArray(reply)
        ? Object.values(reply as Record<string, unknown>)[0]
        : reply,
    );
}

export const isCluster = (client: unknown): client is GlideClusterClient =>
  (client as { constructor?: { name?: string } })?.constructor?.name === 'GlideClusterClient';

/** The key a command is routed by: EVAL/EVALSHA's first of KEYS, else the first argument. */
function firstKey(args: readonly string[]): string | undefined {
  const [name] = args;
  if (name === 'EVAL' || name === 'EVALSHA') return Number(args[2]) > 0 ? args[3] : undefined;
  if (name === 'INFO' || name === 'CLIENT' || name === 'SCRIPT' || name === 'PING') return undefined;
  return args[1];
}

/**
 * SCAN over a whole Cluster through GLIDE's cluster scan, in SCAN's shape (`[cursor, keys]`,
 * cursor '0' when done), for inspection's list(). GLIDE keeps a cursor's state while its object
 * lives: the last few are held here between calls.
 */
export class ClusterScans {
  readonly #cursors = new Map<string, ClusterScanCursor>();

  async scan(
    glide: typeof import('@valkey/valkey-glide'),
    client: GlideClusterClient,
    args: readonly string[],
  ) {
    const id = args[1] ?? '0';
    const option = (name: string) => {
      const at = args.indexOf(name);
      return at < 0 ? undefined : args[at + 1];
    };
    const cursor = this.#cursors.get(id) ?? new glide.ClusterScanCursor();
    this.#cursors.delete(id);
    const match = option('MATCH');
    const count = option('COUNT');
    const [next, keys] = await client.scan(cursor, {
      decoder: glide.Decoder.String,
      ...(match === undefined ? {} : { match }),
      ...(count === undefined ? {} : { count: Number(count) }),
    });
    if (next.isFinished()) return ['0', keys.map(String)];
    const nextId = next.getCursor();
    this.#cursors.set(nextId, next);
    // A scan given up half-way (list() stops at its limit) leaves its cursor: keep only a few.
    for (const old of this.#cursors.keys()) if (this.#cursors.size > 8) this.#cursors.delete(old);
    return [nextId, keys.map(String)];
  }
}
