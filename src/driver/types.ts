import type { TlsOptions } from '../base/tls.ts';
import type { Script } from '../scripts/index.ts';

/** One script invocation. */
export interface ScriptCall {
  script: Script;
  keys: string[];
  args: string[];
}

/** Which keys a script arms for tracking (docs/compatibility.md). */
export type TrackingRule = 'declared-keys' | 'read-keys';

/**
 * What the notification canary proved about a connection (src/notify/canary.ts): that an
 * invalidation for a key read inside a script reaches this process, or why not.
 */
export interface TrackingProof {
  readonly ok: boolean;
  /** 'declared-keys': Redis <= 7.0 arms every key a script declares; 'read-keys': Redis >= 7.2 and Valkey. */
  readonly rule?: TrackingRule | undefined;
  /** Milliseconds from the script to the push (three round trips and a connection). */
  readonly ms?: number | undefined;
  /** Why pushes cannot be trusted (ok false). */
  readonly reason?: Error | undefined;
}

/** How a connection came back (DriverHandlers.reset). */
export interface ResetInfo {
  /**
   * The connection now serves from another server (a Sentinel switch, a Cluster slot move)
   * without having dropped; users hear of it as 'reconnected' all the same.
   */
  readonly moved?: boolean | undefined;
  /**
   * The server's run_id changed since the last connection: it restarted, and the keys of the
   * leases behind it may be gone (a restart without persistence loses them all).
   */
  readonly restarted?: boolean | undefined;
  /**
   * With `restarted`: the monotonic time the new connection's checks began. A lease confirmed by
   * a command sent from then on (a waiter that took the lock on the restarted server before the
   * checks finished) lives on the new server and is not lost with the old one's keys.
   */
  readonly since?: number | undefined;
  /** Which keys live behind the connection (a Cluster master serves only some); undefined: all. */
  readonly affects?: ((key: string) => boolean) | undefined;
  /** With `restarted`: how the driver knows, in the words a lost lease reports. */
  readonly detail?: string | undefined;
}

/** What a driver reports to the core. Handlers must not throw. */
export interface DriverHandlers {
  /** An invalidation push: these keys may have changed; `null` means everything may have. */
  invalidate(keys: readonly string[] | null): void;
  /**
   * Tracking was (re-)armed after a (re)connect. Changes made while disconnected were never
   * reported, so the core must re-check every holder and wake every waiter (see ResetInfo).
   */
  reset(info?: ResetInfo): void;
  /**
   * A connection dropped; commands fail until `reset`. `affects` tells which keys lived behind it
   * (a Cluster master serves only some); undefined means every key.
   */
  disconnected(error: Error | undefined, affects?: (key: string) => boolean): void;
  /** A notification canary finished (after each connect and reconnect): `tracking` may have changed. */
  proven(proof: TrackingProof): void;
}

/** What a driver's subscription (Driver.subscribe) reports. Handlers must not throw. */
export interface SubscriptionHandlers {
  message(text: string): void;
  /** Subscribed (again): messages published from now on arrive. */
  up(): void;
  /** The connection dropped: messages are lost until `up`. */
  down(): void;
}

export interface Subscription {
  close(): Promise<void>;
  /**
   * Messages may announce grants their release undid (a Cluster: a release whose PUBLISH found no
   * subscriber on its own node undoes the grant, but the Cluster still carries the message to the
   * other nodes, where this instance listens too). Such a message is a wake-up: the waiter's next
   * attempt finds the grant if it stands.
   */
  readonly hints?: boolean;
}

/** Handlers before the core installs its own: every event is dropped. */
export const NO_HANDLERS: DriverHandlers = { invalidate() {}, reset() {}, disconnected() {}, proven() {} };

/**
 * The small surface the lock core needs from a Redis client. One driver serves one Redis
 * (standalone or sentinel master); quorum mode holds one driver per node.
 */
export interface Driver {
  /**
   * Whether invalidation pushes are armed and proven to arrive by the last canary. False in
   * polling mode, and while tracking is refused or unproven: waiters and holders then poll.
   */
  readonly tracking: boolean;
  /** The last canary's verdict; undefined in polling mode and before the first one. */
  readonly proof: TrackingProof | undefined;
  /** EVALSHA, falling back to EVAL when the server does not know the script. */
  eval(call: ScriptCall): Promise<unknown>;
  /**
   * `eval(call).then(read, fail)` as one promise instead of a chain of them, where the driver can
   * (its own connection on node-redis and ioredis): every acquire and release goes through here.
   */
  evalThen?<T>(call: ScriptCall, read: (reply: unknown) => T, fail: (error: unknown) => never): Promise<T>;
  /** Pipelined: one round trip for the batch. Each slot is the reply or the Error for that call. */
  evalMany(calls: readonly ScriptCall[]): Promise<unknown[]>;
  /** A plain command, e.g. `['PTTL', key]`. */
  command(args: readonly string[]): Promise<unknown>;
  setHandlers(handlers: DriverHandlers): void;
  /** Opens the connections and arms tracking; resolves once usable. */
  connect(): Promise<void>;
  /**
   * Closes what the driver opened (a user's own client is left open). `force` (destroy()): cut
   * the sockets at once, without waiting for anything the server would have to answer.
   */
  close(force?: boolean): Promise<void>;
  /**
   * The one-node drivers that together hold every key, for SCAN (Cluster: one per master).
   * Undefined: this driver itself.
   */
  scanNodes?(): readonly Driver[];
  /** Whether one script may name all these keys (a Cluster: one slot). Undefined: always. */
  readonly sameSlot?: ((keys: readonly string[]) => boolean) | undefined;
  /**
   * Subscribes a connection of the driver's own to `channel` (direct grants, src/engine/grants.ts),
   * opened now and re-subscribed after every reconnect (a Cluster: on every master; Sentinel: on
   * the current master; FanOut). Undefined: the driver cannot (the memory backend), and waiters
   * are woken by pushes alone.
   */
  readonly subscribe?: ((channel: string, handlers: SubscriptionHandlers) => Subscription) | undefined;
  /** Set when the `durability` option asks for WAIT after every acquisition (Sentinel, Cluster). */
  readonly durability?: DurabilityCheck | undefined;
}

/**
 * WAIT after a write, on the very connection that wrote it: WAIT counts the replicas that
 * acknowledged *that connection's* writes, so a WAIT on a fresh connection proves nothing.
 */
export interface DurabilityCheck {
  readonly replicas: number;
  readonly timeout: number;
  /** Identifies the connection serving `key` now; take it before sending the write. */
  epoch(key: string): number;
  /**
   * WAIT replicas timeout on the connection serving `key`. Rejects when that connection is no
   * longer the one of `epoch` (a reconnect or failover came in between). Resolves with the
   * number of replicas that acknowledged.
   */
  wait(key: string, epoch: number): Promise<number>;
}

/** Options of a plain one-node driver, the same for node-redis and ioredis. */
export interface NodeDriverOptions {
  url: string;
  tracking: boolean;
  /**
   * How long the connection may leave a command (or its handshake) unanswered before the driver
   * gives it up and reconnects (src/driver/watchdog.ts). Default DEFAULT_COMMAND_TIMEOUT.
   */
  commandTimeout?: number | undefined;
  /** A user's own client of the driver's library: used for commands and left open on close. */
  client?: unknown;
  /** TLS settings for the connections the driver opens (a rediss:// url), passed to node:tls. */
  tls?: TlsOptions | undefined;
  /** Names the notification canary's keys (default: under the prefix "leasehold"). */
  canaryKey?: (() => string) | undefined;
  /**
   * Broadcast tracking: every write to a key starting with one of these prefixes is pushed, with
   * no read needed (the inspection views: `leasehold top`, the dashboard). Redis refuses
   * overlapping prefixes. Give a `canaryKey` under one of them.
   */
  bcast?: readonly string[] | undefined;
}

/**
 * Builds the plain one-node driver a topology driver uses per node (node-redis or ioredis).
 * `canaryKey` names the keys of that node's notification canary (a Cluster master must own them).
 */
export type NodeDriverFactory = (url: string, tracking: boolean, canaryKey?: () => string) => Driver;

/** CLIENT TRACKING ON [REDIRECT id] [BCAST PREFIX p...] NOLOOP. */
export function trackingOn(redirect: string | undefined, bcast: readonly string[] | undefined): string[] {
  return [
    'CLIENT',
    'TRACKING',
    'ON',
    ...(redirect === undefined ? [] : ['REDIRECT', redirect]),
    ...(bcast === undefined ? [] : ['BCAST', ...bcast.flatMap((prefix) => ['PREFIX', prefix])]),
    'NOLOOP',
  ];
}

/**
 * A second CLIENT TRACKING ON ... BCAST with the same prefixes on one connection: two arms raced
 * (each connection's 'ready' arms); the first one's tracking stands.
 */
export function isBcastOverlap(error: unknown): boolean {
  return error instanceof Error && /overlaps with an existing prefix/.test(error.message);
}

/**
 * A command refused before it was written: the connection is not ready (reconnecting). Unlike a
 * command that went out and got no reply, it certainly did nothing on the server, so an
 * acquisition that fails this way leaves no key to give back.
 */
export class NotSentError extends Error {
  constructor() {
    super('the connection to Redis is not ready (reconnecting): the command was not sent');
    this.name = 'NotSentError';
  }
}

export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

export function evalArgs(call: ScriptCall, useSha: boolean): string[] {
  return [
    useSha ? 'EVALSHA' : 'EVAL',
    useSha ? call.script.sha : call.script.source,
    String(call.keys.length),
    ...call.keys,
    ...call.args,
  ];
}

/**
 * The server answered with an error reply (`NOPERM ...`, `ERR unknown subcommand ...`), as opposed
 * to a connection that failed: a refused CLIENT TRACKING is the first kind.
 */
export function isErrorReply(error: unknown): boolean {
  return error instanceof Error && /^[A-Z][A-Z_]*[A-Z] /.test(error.message);
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Waits for a graceful close at most `ms`, so a hung server cannot hang close(); 0: none at all. */
export async function closeWithin(
  graceful: () => Promise<unknown>,
  force: () => void,
  ms = 1_000,
): Promise<void> {
  if (ms === 0) return void attempt(force);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      graceful().catch(() => {}),
      new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
    attempt(force);
  }
}

function attempt(force: () => void): void {
  try {
    force();
  } catch {
    // already closed
  }
}

/**
 * The client libraries leasehold drives: node-redis (`redis`), ioredis, iovalkey (Valkey's fork
 * of ioredis, the same API: driven by the ioredis driver, its connections made with iovalkey),
 * and Valkey GLIDE (`@valkey/valkey-glide`: polling, src/driver/glide.ts).
 */
export type DriverKind = 'node-redis' | 'ioredis' | 'iovalkey' | 'glide';

/** The npm package of a client kind. */
export const packageOf = (kind: DriverKind): string =>
  kind === 'node-redis' ? 'redis' : kind === 'glide' ? '@valkey/valkey-glide' : kind;
