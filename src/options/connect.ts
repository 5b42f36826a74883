import { defaultOwner } from '../base/owner.ts';
import { DEFAULT_COMMAND_TIMEOUT } from '../driver/watchdog.ts';
import { MemoryBackend } from '../memory/backend.ts';
import {
  checkDuration,
  checkKnownKeys,
  checkObject,
  checkOwner,
  checkTimeout,
  checkTtl,
  fail,
} from './check.ts';
import { checkPostgres, isPgPool, type PostgresOptions, type ValidPostgres } from './postgres.ts';
import {
  checkDriver,
  checkNodes,
  checkPrefix,
  checkUrl,
  DEFAULT_PREFIX,
  type DriverKind,
  defaultUrl,
  detectClient,
  installedDriver,
} from './redis.ts';
import { checkTls, type TlsOptions } from './tls.ts';
import {
  type ClusterOptions,
  checkTopology,
  type DurabilityOptions,
  type SentinelOptions,
  type ValidTopology,
} from './topology.ts';

/** Options of `Leasehold.connect()`. Durations are in milliseconds. */
export interface ConnectOptions {
  /**
   * One Redis.
   * @default process.env.REDIS_URL, else 'redis://127.0.0.1:6379'
   */
  url?: string;
  /**
   * Bring your own connected (or connectable) node-redis, ioredis or iovalkey client for commands;
   * leasehold then opens only the one extra connection notifications need. A Valkey GLIDE client
   * (`GlideClient` or `GlideClusterClient`) is used as it is, and leasehold opens nothing: an
   * instance on it polls (docs/compatibility.md, "Valkey GLIDE").
   */
  client?: unknown;
  /**
   * Which client library leasehold drives when it opens connections itself.
   * @default the kind of `client` when one is passed; else 'node-redis' when the `redis`
   * package is installed, else 'ioredis' when `ioredis` is, else 'iovalkey' when `iovalkey` (Valkey's
   * fork of ioredis) is, else 'glide' when `@valkey/valkey-glide` is (`lh.stats.driver` says which)
   */
  driver?: DriverKind;
  /**
   * Independent masters (not replicas of each other) for quorum (Redlock) mode: an odd number,
   * 3 or more. A lease then needs a majority of them; see docs/topologies.md.
   * @example nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379']
   */
  nodes?: string[];
  /**
   * Redis Cluster: leasehold discovers the masters from these nodes and tracks keys on each.
   * @example cluster: { rootNodes: ['redis://10.0.0.1:7000'] }
   */
  cluster?: ClusterOptions;
  /**
   * Redis Sentinel: leasehold follows the master the sentinels name, also through failovers.
   * @example sentinel: { name: 'mymaster', sentinels: ['redis://s1:26379', 'redis://s2:26379'] }
   */
  sentinel?: SentinelOptions;
  /**
   * With `sentinel` or `cluster`: WAIT after each acquisition (every primitive) until `replicas`
   * replicas acknowledged it, else release it and throw DurabilityError.
   * @default undefined (no WAIT)
   * @example durability: { replicas: 1, timeout: 100 }
   */
  durability?: DurabilityOptions;
  /**
   * Where locks live. 'redis' (the default) uses `url` / `client`. 'memory' keeps them inside
   * this process in `MemoryBackend.shared`, which every instance connected with 'memory'
   * shares; pass your own `new MemoryBackend()` to share one store between chosen instances
   * only (a fresh one per unit test, say). Same API, semantics, notifications and fencing tokens.
   * @default 'redis'
   * @example
   * const lh = await Leasehold.connect({ backend: 'memory' });
   */
  backend?: 'redis' | 'memory' | MemoryBackend;
  /**
   * TLS settings for a `rediss://` `url` or `nodes`: the certificate authorities to trust, a
   * client certificate, the server name to verify. Certificates are always verified unless
   * `rejectUnauthorized: false`. Not with `client` (configure TLS on your client), `cluster` or
   * `sentinel` (not supported yet: their `rediss://` URLs use Node's bundled CAs and
   * NODE_EXTRA_CA_CERTS). See docs/security.md.
   * @default undefined (a `rediss://` URL verifies against Node's bundled CAs plus NODE_EXTRA_CA_CERTS)
   * @example
   * tls: { ca: readFileSync('/etc/ssl/redis-ca.pem') }
   */
  tls?: TlsOptions;
  /**
   * Key namespace: keys look like `<prefix>:{<name>}`.
   * @default 'leasehold'
   */
  prefix?: string;
  /**
   * Lease validity; automatic extension renews it every third of it. From 12 ms (see
   * docs/getting-started.md, "How short a ttl") to 2,147,483,647 ms (24 d 20 h).
   * @default 10_000
   */
  ttl?: number;
  /**
   * How waiters and holders learn of changes.
   * 'auto': from invalidation pushes (CLIENT TRACKING) once a canary proved, on connect and after
   * every reconnect, that a push for a key read inside a script arrives; by polling otherwise (a
   * proxy, an ACL without `client|tracking`, a managed service without tracking), announced by
   * the 'notifications' event. 'tracking': the same, but connect() rejects with
   * NotificationsError when the first proof fails. 'polling': never pushes; waiters poll every
   * `retryDelay`, holders learn of loss at their next extension.
   * @default 'auto'
   */
  notifications?: 'auto' | 'tracking' | 'polling';
  /**
   * Polling interval of waiters in 'polling' mode, and pause after a failed command.
   * @default 100
   */
  retryDelay?: number;
  /**
   * How long connect() waits for Redis before rejecting with ConnectError: any number of ms
   * above 0, or Infinity to wait until Redis answers.
   * @default 5_000
   */
  connectTimeout?: number;
  /**
   * How long a connection may leave a command unanswered: past it the connection is taken for
   * dead (a stalled Redis, a network that drops packets while the TCP connection stays open),
   * every call still waiting on it fails with RedisUnavailableError, and leasehold reconnects.
   * It counts as a dropped connection (see `onDisconnect`). This bounds every call while Redis
   * does not answer: `tryAcquire`, `release`, `extend`, `inspect`, `list` settle within it
   * (docs/safety.md, "When Redis does not answer"). Keep it above the slowest reply you accept:
   * a fork, a slow command of another client, a busy script (Redis's own threshold is 5 s).
   * @default 5_000
   */
  commandTimeout?: number;
  /**
   * What a lost connection does to the leases behind it.
   * 'abort': their signals abort at once (LockLostError, reason 'disconnected'): while the
   * connection is down nobody can tell this process that the lock changed hands, and a Redis
   * that restarted empty hands it to the next caller at once. Their keys are released after the
   * reconnect, so waiters elsewhere need not wait for the TTL.
   * 'reverify': leases stay valid until their validity runs out; after the reconnect each is
   * checked and kept when its key still holds its token. Survives network blips and failovers,
   * at the price of a window in which two holders may both trust their lease: fence your writes.
   * @default 'abort'
   */
  onDisconnect?: 'abort' | 'reverify';
  /**
   * The owner stamped on every lease this instance acquires without an `owner` of its own: what
   * `lh.inspect()`, `leasehold top` and the dashboard show as the holder. At most 200 characters.
   * @default `${os.hostname()}:${process.pid}:${path.basename(process.title)}` (e.g. `web-3:4242:node`)
   */
  owner?: string;
  /**
   * Opt-in low-latency mode for waiters (docs/low-latency.md): while a wait of this instance is
   * younger than `window` ms, one PING goes to Redis every `interval` ms (at most one in flight,
   * however many waiters), which keeps the waiting process warm: a lock handed to a waiter that
   * has been idle arrives sooner (docs/benchmarks.md, section 2b). Waiters are still woken and granted by push; the
   * PINGs decide nothing. `true` takes the defaults. Costs Redis 1000 / `interval` PINGs per second
   * per waiting process, during the first `window` ms of each wait only.
   * @default off; `true` = { interval: 2, window: 1_000 }
   */
  lowLatency?: boolean | { interval?: number; window?: number };
  /**
   * PostgreSQL instead of Redis (docs/postgres.md): a postgres:// URL, or { url | pool, listenUrl,
   * schema, table, migrate }. The same API, with LISTEN/NOTIFY for instant wake-up and loss.
   * A node-postgres Pool given as `client` is taken as `postgres: { pool }`.
   */
  postgres?: string | PostgresOptions;
}

/** The `lowLatency` connect option, resolved (docs/low-latency.md). */
export interface LowLatency {
  /** A PING every `interval` ms while a wait is warm. */
  interval: number;
  /** How long one wait keeps the process warm, from its start (ms). */
  window: number;
}

export interface ValidConnectOptions extends ValidTopology {
  /** Independent masters for quorum mode; undefined for one Redis. */
  nodes: string[] | undefined;
  /** The in-memory store, when `backend` is not Redis. */
  memory: MemoryBackend | undefined;
  /** PostgreSQL, when `postgres` (or a pg Pool as `client`) was given. */
  postgres: ValidPostgres | undefined;
  url: string;
  client: unknown;
  driver: DriverKind;
  /** TLS settings for the connections leasehold opens (url or nodes). */
  tls: TlsOptions | undefined;
  prefix: string;
  ttl: number;
  notifications: 'auto' | 'tracking' | 'polling';
  retryDelay: number;
  connectTimeout: number;
  commandTimeout: number;
  onDisconnect: 'abort' | 'reverify';
  owner: string;
  lowLatency: LowLatency | undefined;
}

const KNOWN = [
  'backend',
  'url',
  'client',
  'driver',
  'nodes',
  'cluster',
  'sentinel',
  'durability',
  'tls',
  'prefix',
  'ttl',
  'notifications',
  'retryDelay',
  'connectTimeout',
  'commandTimeout',
  'onDisconnect',
  'owner',
  'lowLatency',
  'postgres',
] as const;

export function checkConnectOptions(options: unknown): ValidConnectOptions {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, KNOWN, 'Leasehold.connect()');
  const topologyOptions = checkTopology(o);
  const postgres = checkPostgres(isPgPool(o['client']) ? o['client'] : o['postgres']);
  if (postgres !== undefined) checkAlone(o);
  const url = checkUrl(given(o, 'url') ?? defaultUrl());
  const client = postgres === undefined ? o['client'] : undefined;
  const clientKind = client === undefined ? undefined : detectClient(client);
  const driver = checkDriver(given(o, 'driver') ?? clientKind ?? installedDriver());
  // An ioredis-like client may be ioredis's or iovalkey's: either name is right for it.
  const matches = driver === clientKind || (clientKind === 'ioredis' && driver === 'iovalkey');
  if (clientKind !== undefined && !matches) {
    fail('driver', `"${clientKind}" to match the client passed in "client"`, driver);
  }
  const prefix = checkPrefix(given(o, 'prefix') ?? DEFAULT_PREFIX);
  const notifications = given(o, 'notifications') ?? 'auto';
  if (notifications !== 'auto' && notifications !== 'tracking' && notifications !== 'polling') {
    fail('notifications', '"auto", "tracking" or "polling"', notifications);
  }
  const connectTimeout =
    o['connectTimeout'] === undefined ? 5_000 : checkTimeout(o['connectTimeout'], 'connectTimeout');
  if (connectTimeout === 0) fail('connectTimeout', 'a number of milliseconds > 0', connectTimeout);
  const onDisconnect = given(o, 'onDisconnect') ?? 'abort';
  if (onDisconnect !== 'abort' && onDisconnect !== 'reverify') {
    fail('onDisconnect', '"abort" or "reverify"', onDisconnect);
  }
  const backend = o['backend'];
  const memory =
    backend === 'memory' ? MemoryBackend.shared : backend instanceof MemoryBackend ? backend : undefined;
  if (memory === undefined && backend !== undefined && backend !== 'redis') {
    fail('backend', '"redis", "memory" or a MemoryBackend', backend);
  }
  if (memory !== undefined && client !== undefined)
    fail('client', 'left out with an in-memory backend', client);
  const nodes = checkNodes(o['nodes']);
  if (nodes !== undefined) {
    for (const other of ['url', 'client', 'backend', 'cluster', 'sentinel'] as const) {
      if (o[other] !== undefined) fail(other, 'left out when "nodes" is given (quorum mode)', o[other]);
    }
  }
  if (driver === 'glide' && o['sentinel'] !== undefined) {
    fail(
      'driver',
      '"node-redis", "ioredis" or "iovalkey" with "sentinel" (Valkey GLIDE does not follow a Sentinel set here)',
      driver,
    );
  }
  const tls = checkConnectTls(o, nodes ?? [url]);
  if (driver === 'glide' && tls !== undefined) {
    for (const key of ['cert', 'key', 'servername'] as const) {
      if (tls[key] !== undefined)
        fail(`tls.${key}`, 'left out with driver "glide" (GLIDE takes only tls.ca)', key);
    }
  }
  return {
    ...topologyOptions,
    nodes,
    memory,
    postgres,
    url,
    client,
    driver,
    tls,
    prefix,
    ttl: o['ttl'] === undefined ? 10_000 : checkTtl(o['ttl']),
    notifications,
    retryDelay: o['retryDelay'] === undefined ? 100 : checkDuration(o['retryDelay'], 'retryDelay'),
    connectTimeout,
    commandTimeout:
      o['commandTimeout'] === undefined
        ? DEFAULT_COMMAND_TIMEOUT
        : checkDuration(o['commandTimeout'], 'commandTimeout'),
    onDisconnect,
    owner: o['owner'] === undefined ? defaultOwner() : checkOwner(o['owner']),
    lowLatency: checkLowLatency(o['lowLatency']),
  };
}

/** With PostgreSQL, the Redis-only options are bad input (said, not ignored). */
function checkAlone(o: Record<string, unknown>): void {
  const pool = isPgPool(o['client']);
  if (pool && o['postgres'] !== undefined) fail('client', 'left out when "postgres" is given', o['client']);
  for (const other of ['url', 'nodes', 'cluster', 'sentinel', 'tls', 'driver', 'durability'] as const) {
    if (o[other] !== undefined) fail(other, 'left out with PostgreSQL ("postgres")', o[other]);
  }
  if (o['backend'] !== undefined) fail('backend', 'left out with PostgreSQL ("postgres")', o['backend']);
}

/** `lowLatency`: off, `true` (defaults) or `{ interval, window }` in ms. */
function checkLowLatency(value: unknown): LowLatency | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { interval: 2, window: 1_000 };
  const o = checkObject(value, 'lowLatency');
  checkKnownKeys(o, ['interval', 'window'], 'lowLatency');
  const interval =
    o['interval'] === undefined ? 2 : checkDuration(o['interval'], 'lowLatency.interval', 1_000);
  const window = o['window'] === undefined ? 1_000 : checkDuration(o['window'], 'lowLatency.window', 60_000);
  return { interval, window };
}

/** `tls`, with the URLs it would apply to; left out where leasehold does not open the connections. */
function checkConnectTls(o: Record<string, unknown>, urls: readonly string[]): TlsOptions | undefined {
  const tls = o['tls'];
  if (tls === undefined) return undefined;
  const elsewhere: Record<string, string> = {
    client: 'left out with "client" (configure TLS on your own client)',
    backend: 'left out with an in-memory backend',
    cluster:
      'left out with "cluster" (not supported yet; rediss:// root nodes verify against Node\'s CAs and NODE_EXTRA_CA_CERTS)',
    sentinel: 'left out with "sentinel" (not supported yet; see docs/security.md)',
  };
  for (const [other, expected] of Object.entries(elsewhere)) {
    if (o[other] !== undefined && !(other === 'backend' && o[other] === 'redis')) fail('tls', expected, tls);
  }
  return checkTls(tls, urls);
}

/**
 * An option's value, undefined only when it was left out: an explicit `null` is bad input
 * (it would otherwise fall back to the default silently, e.g. `url: null` to REDIS_URL).
 */
function given(options: Record<string, unknown>, key: string): unknown {
  const value = options[key];
  if (value === null) fail(key, 'left out or a value, not null', value);
  return value;
}
