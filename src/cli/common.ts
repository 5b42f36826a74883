import { readFileSync } from 'node:fs';
import { redact } from '../base/redact.ts';
import { defaultCanaryKey } from '../driver/canary.ts';
import { createNodeDriver } from '../driver/node-driver.ts';
import { type Driver, type DriverHandlers, type NodeDriverOptions, packageOf } from '../driver/types.ts';
import {
  checkDriver,
  checkName,
  checkPrefix,
  checkTls,
  checkUrl,
  DEFAULT_PREFIX,
  type DriverKind,
  defaultUrl,
  installedDriver,
  type TlsOptions,
} from '../options/index.ts';
import { PostgresDriver } from '../postgres/driver.ts';
import { pgNames } from '../postgres/names.ts';
import { mutexLayout } from '../primitives/mutex.ts';
import { CliError, DOCS, EXIT } from './exit.ts';
import { checkTopologyFlags, type Topology, topologyOf, urlsOf } from './topology.ts';
import { DURATION_EXAMPLES } from './values.ts';

/** Options every command that talks to Redis accepts (for node:util parseArgs). */
export const connectionOptions = {
  redis: { type: 'string' },
  cluster: { type: 'string' },
  sentinel: { type: 'string' },
  nodes: { type: 'string' },
  postgres: { type: 'string' },
  schema: { type: 'string' },
  table: { type: 'string' },
  prefix: { type: 'string' },
  driver: { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-servername': { type: 'string' },
  'tls-insecure': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const connectionHelp = `Connection options:
  --redis <url>       Redis URL (default: $REDIS_URL, else redis://127.0.0.1:6379); rediss:// for
                      TLS. A password in it is never printed; $REDIS_URL keeps it out of ps
  --prefix <prefix>   key namespace (default: leasehold)
  --driver <name>     node-redis, ioredis, iovalkey or glide (default: the one installed, in that order)
  --tls-ca <file>     trust the CA certificates in this PEM file instead of Node's bundled ones
                      (NODE_EXTRA_CA_CERTS=<file> adds to them instead); needs rediss://
  --tls-cert <file>   client certificate (PEM), with --tls-key, for tls-auth-clients servers
  --tls-key <file>    the client certificate's private key (PEM)
  --tls-servername <name>  the name the server certificate must carry (default: the URL's host)
  --tls-insecure      do not verify the server's certificate (encrypted, but anyone on the path
                      can pose as the server and read the password): for throw-away setups only
  --json              machine-readable output (JSON)
  -h, --help          show this help`;

export interface Connection {
  /** One Redis's URL (with a topology: the default one, unused). */
  url: string;
  /** One Redis, or a Cluster, Sentinel master or quorum (--cluster, --sentinel, --nodes). */
  topology: Topology;
  prefix: string;
  driver: DriverKind;
  /** The --tls-* flags as the library's `tls` option; undefined when none was given. */
  tls?: TlsOptions | undefined;
}

type ConnectionValues = {
  redis?: string | undefined;
  postgres?: string | undefined;
  schema?: string | undefined;
  table?: string | undefined;
  cluster?: string | undefined;
  sentinel?: string | undefined;
  nodes?: string | undefined;
  prefix?: string | undefined;
  driver?: string | undefined;
  'tls-ca'?: string | undefined;
  'tls-cert'?: string | undefined;
  'tls-key'?: string | undefined;
  'tls-servername'?: string | undefined;
  'tls-insecure'?: boolean | undefined;
};

/** The connection flags, checked as `Leasehold.connect()` checks `url`, `prefix`, `driver` and `tls`. */
export function connection(values: ConnectionValues): Connection {
  const topology = topologyOf(values);
  usage(() => checkTopologyFlags(topology));
  const url =
    topology.kind === 'redis' ? usage(() => checkUrl(values.redis ?? defaultUrl(), '--redis')) : defaultUrl();
  const urls = urlsOf({ url, topology });
  const tls = tlsFlags(values);
  if (tls !== undefined && topology.kind === 'postgres') {
    throw new CliError('--tls-* flags are for Redis: with --postgres, put sslmode=... in the URL');
  }
  if (tls !== undefined && !urls.every((u) => u.startsWith('rediss://'))) {
    const where =
      topology.kind === 'redis'
        ? 'a rediss:// URL (--redis or $REDIS_URL)'
        : `rediss:// URLs in --${topology.kind}`;
    throw new CliError(`--tls-* flags need ${where}: with redis:// the connection would not be encrypted`);
  }
  const driver = usage(() => checkDriver(values.driver ?? installedDriver(), '--driver'));
  if (driver === 'glide' && topology.kind === 'sentinel') {
    throw new CliError(
      '--driver glide: Valkey GLIDE does not follow a Sentinel set here (use node-redis or ioredis)',
    );
  }
  return usage(() => ({
    url,
    topology,
    prefix: checkPrefix(values.prefix ?? DEFAULT_PREFIX, '--prefix'),
    driver,
    tls: tls === undefined ? undefined : checkTls(tls, urls, '--tls'),
  }));
}

/** The --tls-* flags as the `tls` option, files read; undefined when none was given. */
function tlsFlags(values: ConnectionValues): TlsOptions | undefined {
  const read = (flag: 'tls-ca' | 'tls-cert' | 'tls-key'): Buffer | undefined => {
    const file = values[flag];
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (error) {
      throw new CliError(
        `--${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  };
  const ca = read('tls-ca');
  const cert = read('tls-cert');
  const key = read('tls-key');
  if ((cert === undefined) !== (key === undefined))
    throw new CliError('--tls-cert and --tls-key go together');
  const tls: TlsOptions = {
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
    ...(values['tls-servername'] === undefined ? {} : { servername: values['tls-servername'] }),
    ...(values['tls-insecure'] === true ? { rejectUnauthorized: false } : {}),
  };
  return Object.keys(tls).length === 0 ? undefined : tls;
}

/** Runs the library's option checks on command-line values: a TypeError is a usage error. */
export function usage<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    throw error instanceof TypeError ? usageError(error) : error;
  }
}

/**
 * A TypeError of the library's option checks in the CLI's words: `--prefix must be ...`, not
 * `leasehold: option "--prefix" must be ...` (main() puts the command's name in front).
 */
export function usageError(error: TypeError): CliError {
  return new CliError(
    error.message
      .replace(/^leasehold: /, '')
      .replace(/^option "(--[\w-]+)"/, '$1')
      .replace(/^option "postgres(?:\.url)?"/, '--postgres')
      .replace(/^option "postgres\.(schema|table)"/, '--$1')
      .replace(/^option "(\w+)"/, '<$1>'),
  );
}

/**
 * node:util parseArgs's error in the CLI's words (its own text suggests `--ttl=-XYZ` and talks
 * of positionals). `run` alone takes a command after `--`, so only it mentions that.
 */
export function parseArgsMessage(error: { code: string; message: string }, command: string): string {
  const option = /'(?:-\w, )?(--?[\w-]+)/.exec(error.message)?.[1] ?? 'an option';
  switch (error.code) {
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // `--ttl -5`: the value looks like an option, or is missing.
      if (/ambiguous/.test(error.message)) {
        return ['--ttl', '--timeout', '--grace'].includes(option)
          ? `${option} must be a duration like ${DURATION_EXAMPLES}; a negative one is not accepted`
          : `${option} needs a value; the argument after it starts with "-" (a value that does goes as ${option}=<value>)`;
      }
      return /argument missing/.test(error.message) ? `${option} needs a value` : `${option} takes no value`;
    }
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return command === 'run'
        ? `unknown option ${option}; if it is the command's, put the command to run after --`
        : `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(error.message)?.[1] ?? ''}`.trimEnd();
    default:
      return error.message;
  }
}

export function lockName(positionals: readonly string[]): string {
  const name = positionals[0];
  if (name === undefined || name === '') throw new CliError('missing the lock name (see --help)');
  return usage(() => checkName(name, 'name'));
}

export function mutexKeysOf(conn: Connection, name: string): { key: string; fence: string } {
  const { lock, fence } = mutexLayout.keys(conn.prefix, name);
  return { key: lock, fence };
}

/** Opens a bare driver (no Leasehold instance) for inspection commands. */
export async function openDriver(
  conn: Connection,
  tracking: boolean,
  extra: Pick<NodeDriverOptions, 'bcast' | 'canaryKey'> & { handlers?: DriverHandlers } = {},
  timeout = 5_000,
): Promise<Driver> {
  const { handlers, ...options } = extra;
  // The client package loads before the clock starts: on a busy machine its import alone took
  // seconds, which the timeout then reported as "no answer". A missing one is reported by connect().
  await import(packageOf(conn.driver)).catch(() => {});
  const driver =
    conn.topology.kind === 'postgres'
      ? postgresDriver(conn.topology, tracking)
      : createNodeDriver(conn.driver, { url: conn.url, tracking, tls: conn.tls, ...options });
  // Before connect(): the notification canary's verdict arrives during it.
  if (handlers !== undefined) driver.setHandlers(handlers);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      driver.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout);
      }),
    ]);
  } catch (error) {
    await driver.close().catch(() => {});
    const message = (error as Error).message;
    const where =
      conn.topology.kind === 'postgres'
        ? `PostgreSQL at ${redact(conn.topology.url)}`
        : `Redis at ${redact(conn.url)}`;
    throw new CliError(
      `could not connect to ${where}: ${linked(message)}${hint(message)}`,
      refusedAccess(message) ? EXIT.noPermission : EXIT.unavailable,
    );
  } finally {
    clearTimeout(timer);
  }
  return driver;
}

/**
 * A bare PostgreSQL driver for the views and inspection commands: it never creates the table (a
 * view that finds none says to run `leasehold migrate`).
 */
export function postgresDriver(t: Extract<Topology, { kind: 'postgres' }>, tracking: boolean): Driver {
  return new PostgresDriver({
    url: t.url,
    names: pgNames(t.schema, t.table),
    migrate: false,
    tracking,
    commandTimeout: 5_000,
    canaryKey: defaultCanaryKey(DEFAULT_PREFIX),
  });
}

/** Redis refused the credentials, or a command or key (also inside a script), as opposed to not answering. */
export function refusedAccess(message: string): boolean {
  return /\b(WRONGPASS|NOAUTH|NOPERM)\b|ACL failure|can't run this command|can't access at least one of the keys/.test(
    message,
  );
}

/** What to do about a refusal the message alone does not explain; the library's own hint made a link. */
function hint(message: string): string {
  if (message.includes('docs/security.md')) return '';
  if (refusedAccess(message) && !/WRONGPASS|NOAUTH/.test(message)) {
    return ` (the ACL user lacks a permission leasehold needs: ${DOCS}/security.md)`;
  }
  if (/does not match certificate's altnames/.test(message)) {
    return " (TLS: the server's certificate is for another name: give that name with --tls-servername <name>)";
  }
  if (/certificate|self[- ]signed|unable to (get|verify)/i.test(message)) {
    return ' (TLS: the server certificate is not trusted: pass its CA with --tls-ca <file> or NODE_EXTRA_CA_CERTS)';
  }
  return '';
}

/** The library's pointer to docs/security.md, as a link (the package ships no docs). */
function linked(message: string): string {
  return message.replace('docs/security.md', `${DOCS}/security.md`);
}

/**
 * A Redis command failed while `what`: a refused permission (NOPERM) exits 77 and names what
 * was refused; anything else is Redis not answering (69).
 */
export function redisFailure(error: unknown, what: string): never {
  const message = error instanceof Error ? error.message : String(error);
  throw new CliError(
    `Redis refused or failed ${what}: ${linked(message)}${hint(message)}`,
    refusedAccess(message) ? EXIT.noPermission : EXIT.unavailable,
  );
}

export function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function printJson(value: unknown, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n`);
}

/** How a long-running view (watch, top, dashboard) learns that it should stop. */
export interface Stopper {
  /** Resolves on SIGINT, SIGTERM, a closed stdout (EPIPE), or stop(). */
  readonly stopped: Promise<void>;
  /** Resolves `stopped` and removes the handlers (idempotent): call it on every way out. */
  stop(): void;
}

/**
 * Listens for SIGINT and SIGTERM from now on. Call it before the view prints anything: a
 * supervisor that stops the view once its first line appears would otherwise find no handler
 * yet and kill it (a SIGINT sent on the first line of `watch` did).
 */
export function stopOnSignals(): Stopper {
  let resolve = (): void => {};
  const stopped = new Promise<void>((r) => {
    resolve = r;
  });
  const stop = () => {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.stdout.off('error', stop);
    resolve();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // Whoever read our output went away (EPIPE): nobody is watching any more.
  process.stdout.once('error', stop);
  return { stopped, stop };
}
