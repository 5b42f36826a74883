/**
 * Which service or server a Redis-compatible endpoint is, from what `leasehold doctor` already has:
 * the host name it connected to, one `INFO server` reply, and the error texts it met (a refused
 * CLIENT TRACKING, a failed canary). Pure, so that test/unit/service-class.test.ts can feed it
 * INFO texts shaped like each service's. What each service documents, with links, is in
 * docs/compatibility.md ("Managed services and other servers"); the notes below say only what
 * those pages say, and what leasehold does about it.
 *
 * Some services cannot be told apart from a server of one's own: Memorystore for Redis and for
 * Valkey are reached by private IP addresses and report the engine's own INFO, Redis Software runs
 * on the user's own hosts, and any service behind a private DNS name or a tunnel hides its host
 * name. Those come out as the engine ("redis", "valkey"), named as such, never guessed.
 */

export type ServiceId =
  | 'redis'
  | 'valkey'
  | 'keydb'
  | 'dragonfly'
  | 'garnet'
  | 'redis-cloud'
  | 'elasticache'
  | 'elasticache-serverless'
  | 'memorydb'
  | 'azure-cache'
  | 'azure-managed-redis'
  | 'upstash';

/** The services and servers told apart by something of their own (the rest are their engine). */
type Recognised = Exclude<ServiceId, 'redis' | 'valkey'>;

/** The server software behind the endpoint, as its INFO names it. */
export interface Engine {
  product: string;
  version: string;
}

/** What the classification is made from. */
export interface ServiceFacts {
  /** The host name (or address) of the URL connected to. */
  host: string;
  /** The fields of `INFO server` (any section will do: unknown fields are ignored). */
  info: Readonly<Record<string, string>>;
  /** Error texts met on the way (a CLIENT TRACKING refusal, a canary's failure). */
  errors?: readonly string[];
}

export interface ServiceClass {
  id: ServiceId;
  /** For people: "Amazon ElastiCache Serverless", "self-hosted Valkey, or ...". */
  name: string;
  /** Whether a managed service was recognised (false: a server of one's own, as far as can be told). */
  managed: boolean;
  /** Which fact gave it away: "host name *.upstash.io", "INFO dragonfly_version". */
  detectedBy: string;
}

/** What `doctor` proved, for the mode line and the notes. */
export interface ModeFacts {
  driver: string;
  notifications: 'tracking' | 'polling';
  trackingRule: 'declared-keys' | 'read-keys' | null;
  /** Why pushes are not proven (null when they are). */
  reason: string | null;
}

/** Splits an INFO reply into its fields (section headers and blank lines are dropped). */
export function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('#')) continue;
    const at = line.indexOf(':');
    if (at > 0) fields[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  return fields;
}

/**
 * The server software, from INFO. Valkey, Dragonfly, Garnet and KeyDB all report a
 * `redis_version` for old clients' sake, so that field names only plain Redis; each fork's own
 * field (or trace) names it. KeyDB has no field of its own in `INFO server`: its binary's name,
 * the `features` field KeyDB 6.3.4 added, or the 255.255.255 that unreleased builds report.
 */
export function engineOf(info: Readonly<Record<string, string>>): Engine {
  const redis = info['redis_version'] ?? '(version unknown)';
  const dragonfly = info['dragonfly_version'];
  if (dragonfly !== undefined) return { product: 'Dragonfly', version: dragonfly.replace(/^df-v?/, '') };
  if (info['garnet_version'] !== undefined || lower(info['server_name']) === 'garnet') {
    return { product: 'Garnet', version: info['garnet_version'] ?? redis };
  }
  if (info['valkey_version'] !== undefined) return { product: 'Valkey', version: info['valkey_version'] };
  if (isKeyDb(info)) return { product: 'KeyDB', version: redis };
  const name = info['server_name'] ?? 'redis';
  return { product: `${name.charAt(0).toUpperCase()}${name.slice(1)}`, version: redis };
}

const lower = (value: string | undefined) => (value ?? '').toLowerCase();

function isKeyDb(info: Readonly<Record<string, string>>): boolean {
  return (
    info['mvcc_depth'] !== undefined ||
    /keydb/i.test(info['executable'] ?? '') ||
    /\bcluster_mget\b/.test(info['features'] ?? '') ||
    info['redis_version'] === '255.255.255'
  );
}

/** Host names of managed endpoints, most specific first. A hint only: an IP address or a private alias hides them. */
const HOSTS: readonly { pattern: RegExp; id: Recognised; shape: string }[] = [
  {
    pattern: /(^|\.)serverless\.[a-z0-9-]+\.cache\.amazonaws\.com(\.cn)?$/,
    id: 'elasticache-serverless',
    shape: '*.serverless.<region>.cache.amazonaws.com',
  },
  { pattern: /\.cache\.amazonaws\.com(\.cn)?$/, id: 'elasticache', shape: '*.cache.amazonaws.com' },
  {
    pattern: /\.memorydb\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/,
    id: 'memorydb',
    shape: '*.memorydb.<region>.amazonaws.com',
  },
  {
    pattern: /\.redis\.cache\.(windows\.net|chinacloudapi\.cn|usgovcloudapi\.net)$/,
    id: 'azure-cache',
    shape: '*.redis.cache.windows.net',
  },
  {
    pattern: /(\.redis\.azure\.net|\.redisenterprise\.cache\.azure\.net)$/,
    id: 'azure-managed-redis',
    shape: '*.redis.azure.net',
  },
  { pattern: /\.upstash\.io$/, id: 'upstash', shape: '*.upstash.io' },
  { pattern: /\.(redis-cloud|redislabs)\.com$/, id: 'redis-cloud', shape: '*.redis-cloud.com' },
];

/** Error texts only one server gives. */
const ERRORS: readonly { pattern: RegExp; id: Recognised; text: string }[] = [
  {
    pattern: /Lua scripts without any input keys are not supported/i,
    id: 'elasticache-serverless',
    text: 'Lua scripts without any input keys are not supported',
  },
  {
    pattern: /script tried accessing undeclared key/i,
    id: 'dragonfly',
    text: 'script tried accessing undeclared key',
  },
];

const NAMES: Record<Recognised, string> = {
  keydb: 'KeyDB',
  dragonfly: 'Dragonfly',
  garnet: 'Garnet',
  'redis-cloud': 'Redis Cloud',
  elasticache: 'Amazon ElastiCache',
  'elasticache-serverless': 'Amazon ElastiCache Serverless',
  memorydb: 'Amazon MemoryDB',
  'azure-cache': 'Azure Cache for Redis',
  'azure-managed-redis': 'Azure Managed Redis',
  upstash: 'Upstash',
};

const managedIds: ReadonlySet<ServiceId> = new Set<ServiceId>([
  'redis-cloud',
  'elasticache',
  'elasticache-serverless',
  'memorydb',
  'azure-cache',
  'azure-managed-redis',
  'upstash',
]);

const named = (id: Recognised, detectedBy: string): ServiceClass => ({
  id,
  name: NAMES[id],
  managed: managedIds.has(id),
  detectedBy,
});

/**
 * Classifies an endpoint. Order: the host name of a managed endpoint (an ElastiCache one that is
 * not serverless yields to a serverless cache's own error text), then what INFO says of the
 * platform (ElastiCache and MemoryDB put their name in `os`), then an error text only one server
 * gives, then the engine's own INFO field. A plain Redis or Valkey is said to be one: self-hosted,
 * or a service that does not identify itself.
 */
export function classifyService(facts: ServiceFacts): ServiceClass {
  const host = facts.host.toLowerCase().replace(/\.$/, '');
  const byHost = HOSTS.find((h) => h.pattern.test(host));
  if (byHost !== undefined && byHost.id !== 'elasticache') {
    return named(byHost.id, `host name ${byHost.shape}`);
  }
  const error = facts.errors?.map((e) => ERRORS.find((x) => x.pattern.test(e))).find((x) => x !== undefined);
  if (error?.id === 'elasticache-serverless') return named(error.id, `error: ${error.text}`);
  if (byHost !== undefined) return named('elasticache', `host name ${byHost.shape}`);
  const os = facts.info['os'] ?? '';
  if (/^Amazon MemoryDB/i.test(os)) return named('memorydb', `INFO os: ${os}`);
  if (/^Amazon ElastiCache/i.test(os)) return named('elasticache', `INFO os: ${os}`);
  if (error !== undefined) return named(error.id, `error: ${error.text}`);
  const engine = engineOf(facts.info);
  switch (engine.product) {
    case 'Dragonfly':
      return named('dragonfly', 'INFO dragonfly_version');
    case 'Garnet':
      return named(
        'garnet',
        facts.info['garnet_version'] !== undefined ? 'INFO garnet_version' : 'INFO server_name',
      );
    case 'KeyDB':
      return named('keydb', keyDbEvidence(facts.info));
  }
  const valkey = engine.product === 'Valkey';
  const field = valkey
    ? facts.info['valkey_version'] !== undefined
      ? 'valkey_version'
      : 'server_name'
    : 'redis_version';
  return {
    id: valkey ? 'valkey' : 'redis',
    name: `self-hosted ${engine.product}, or a managed service that does not identify itself`,
    managed: false,
    detectedBy: `INFO ${field}; no managed-service trace in INFO or the host name`,
  };
}

function keyDbEvidence(info: Readonly<Record<string, string>>): string {
  if (info['mvcc_depth'] !== undefined) return 'INFO mvcc_depth';
  if (/keydb/i.test(info['executable'] ?? '')) return `INFO executable: ${info['executable']}`;
  if (/\bcluster_mget\b/.test(info['features'] ?? '')) return 'INFO features: cluster_mget';
  return 'INFO redis_version 255.255.255';
}

/** Whether a `major.minor` version is older than `major.minor` given. */
function older(version: string, major: number, minor: number): boolean {
  const match = /^(\d+)\.(\d+)/.exec(version);
  if (match === null) return false;
  const [a, b] = [Number(match[1]), Number(match[2])];
  return a < major || (a === major && b < minor);
}

/** The drivers that take pushes on a RESP2 subscriber (CLIENT TRACKING ... REDIRECT). */
const redirects = (driver: string) => driver === 'ioredis' || driver === 'iovalkey';

/**
 * What leasehold will run in there, in one line: the notification mode the canary proved, how the
 * pushes travel with this driver, and the two paths every instance uses whatever the mode (scripts
 * by EVALSHA, direct grants by PUBLISH/SUBSCRIBE on one Redis).
 */
export function modeLine(f: ModeFacts): string {
  const paths = 'scripts by EVALSHA; direct grants by PUBLISH/SUBSCRIBE';
  if (f.notifications === 'polling') {
    return `polling (waiters retry every retryDelay, holders check at each extension); ${paths}`;
  }
  const via = redirects(f.driver)
    ? 'redirected to a RESP2 subscriber (CLIENT TRACKING REDIRECT)'
    : 'on the command connection (RESP3)';
  return `tracking, ${f.trackingRule ?? 'unknown'} rule, pushes ${via}; ${paths}`;
}

/**
 * What the service's own documentation says that matters here, given what doctor proved: one
 * line each, only where there is something to know or do. Sources: docs/compatibility.md.
 */
export function serviceNotes(
  service: ServiceClass,
  info: Readonly<Record<string, string>>,
  f: ModeFacts,
): string[] {
  const notes: string[] = [];
  const polling = f.notifications === 'polling';
  switch (service.id) {
    case 'redis-cloud':
    case 'azure-managed-redis': {
      const who = service.id === 'redis-cloud' ? 'Redis Cloud' : 'Azure Managed Redis (Redis Enterprise)';
      if (redirects(f.driver)) {
        notes.push(
          `${who} tracks keys only for a RESP3 connection that takes its own pushes (no REDIRECT): ${f.driver} polls there; --driver node-redis can have pushes`,
        );
      }
      const version = info['redis_version'] ?? '';
      if (older(version, 7, 4)) {
        notes.push(`${who} tracks keys only on databases of Redis 7.4 or later; this one reports ${version}`);
      }
      break;
    }
    case 'elasticache-serverless':
      notes.push('every script must name at least one key there; every leasehold script does');
      if (polling)
        notes.push('AWS does not document CLIENT TRACKING for serverless caches: polling is what to expect');
      break;
    case 'upstash':
      if (polling) notes.push("CLIENT TRACKING is not in Upstash's command list: polling is what to expect");
      break;
    case 'dragonfly':
      if (redirects(f.driver)) {
        notes.push(
          `Dragonfly tracks keys only for a RESP3 connection that takes its own pushes (no REDIRECT, BCAST or PREFIX): ${f.driver} polls there; --driver node-redis can have pushes`,
        );
      }
      notes.push(
        "Dragonfly refuses keys a script does not declare: the fair lock's hand-on writes the next waiter's turn key undeclared and fails there unless Dragonfly runs with --default_lua_flags=allow-undeclared-keys",
      );
      break;
    case 'garnet':
      notes.push('Garnet has no CLIENT TRACKING: instances poll');
      notes.push('Garnet has no streams and no WAIT: elections and the durability option cannot run there');
      break;
  }
  return notes;
}
