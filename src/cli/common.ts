import { readFileSync } from 'node:fs';
import { createNodeDriver } from '../driver/node-driver.ts';
import type { Driver } from '../driver/types.ts';
import { keyFor } from '../engine/context.ts';
import { readOne } from '../inspect/read.ts';
import {
  checkDriver,
  checkName,
  checkPrefix,
  checkUrl,
  DEFAULT_PREFIX,
  defaultUrl,
  installedDriver,
  MAX_LIST_LIMIT,
} from '../options/index.ts';

/**
 * Exit codes of the `leasehold` command (docs/cli.md lists them, online at DOCS). Codes from sysexits.h where one
 * fits; `run` otherwise exits with its command's own code, or 128 + N when a signal N ended it.
 */
export const EXIT = {
  ok: 0,
  /** Bad arguments or options. */
  usage: 64,
  /** Could not connect to Redis, or Redis stopped answering. */
  unavailable: 69,
  /** A bug or an unexpected failure inside leasehold. */
  software: 70,
  /** `run`: the lock was not acquired (busy with --no-wait, or --timeout ran out). */
  notAcquired: 75,
  /** `run`: the lock was lost while the command ran; the command was terminated. */
  lost: 76,
  /** `run`: the command exists but could not be executed. */
  cannotExecute: 126,
  /** `run`: the command was not found. */
  notFound: 127,
} as const;

/** Where the documentation lives online (the package ships only README.md). */
export const DOCS = 'https://github.com/leasehold-js/leasehold/blob/main/docs';

/** A failure with the exit code it maps to; main() prints the message and exits with the code. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT.usage) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Options every command that talks to Redis accepts (for node:util parseArgs). */
export const connectionOptions = {
  redis: { type: 'string' },
  prefix: { type: 'string' },
  driver: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const connectionHelp = `Connection options:
  --redis <url>       Redis URL (default: $REDIS_URL, else redis://127.0.0.1:6379)
  --prefix <prefix>   key namespace (default: leasehold)
  --driver <name>     node-redis or ioredis (default: the one installed, node-redis if both)
  --json              machine-readable output (JSON)
  -h, --help          show this help`;

export interface Connection {
  url: string;
  prefix: string;
  driver: 'node-redis' | 'ioredis';
}

/** The connection flags, checked as `Leasehold.connect()` checks `url`, `prefix` and `driver`. */
export function connection(values: { redis?: string; prefix?: string; driver?: string }): Connection {
  return usage(() => ({
    url: checkUrl(values.redis ?? defaultUrl(), '--redis'),
    prefix: checkPrefix(values.prefix ?? DEFAULT_PREFIX, '--prefix'),
    driver: checkDriver(values.driver ?? installedDriver(), '--driver'),
  }));
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
  return new CliError(error.message.replace(/^leasehold: /, '').replace(/^option "(--[\w-]+)"/, '$1'));
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
          ? `${option} must be a duration like 500, 500ms, 10s or 2m; a negative one is not accepted`
          : `${option} needs a value; the argument after it starts with "-"`;
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

/** Parses a non-negative number of milliseconds, with an optional `ms`, `s` or `m` suffix. */
export function duration(value: string | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (value === 'Infinity' || value === 'inf') return Number.POSITIVE_INFINITY;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value);
  if (match === null)
    throw new CliError(`--${option} must be a duration like 500, 500ms, 10s or 2m; got ${value}`);
  const scale = match[2] === 's' ? 1_000 : match[2] === 'm' ? 60_000 : 1;
  return Number(match[1]) * scale;
}

/** `--limit` of the live views (top, dashboard): how many names they follow, as `lh.list()` caps it. */
export function followLimit(value: string | undefined): number {
  const limit = value === undefined ? 1_000 : Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new CliError(`--limit must be 1..${MAX_LIST_LIMIT}`);
  }
  return limit;
}

export function lockName(positionals: readonly string[]): string {
  const name = positionals[0];
  if (name === undefined || name === '') throw new CliError('missing the lock name (see --help)');
  return usage(() => checkName(name, 'name'));
}

export function keysOf(conn: Connection, name: string): { key: string; fence: string } {
  return { key: keyFor(conn.prefix, name), fence: keyFor(conn.prefix, name, 'fence') };
}

/** Opens a bare driver (no Leasehold instance) for inspection commands. */
export async function openDriver(conn: Connection, tracking: boolean, timeout = 5_000): Promise<Driver> {
  const driver = createNodeDriver(conn.driver, { url: conn.url, tracking });
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
    throw new CliError(
      `could not connect to Redis at ${conn.url}: ${(error as Error).message}`,
      EXIT.unavailable,
    );
  } finally {
    clearTimeout(timer);
  }
  return driver;
}

/** The state of one mutex as Redis has it. */
export interface LockState {
  name: string;
  key: string;
  held: boolean;
  /** The holder's owner token (`lease.token`), when held. */
  token: string | null;
  /** The holder's `owner`, when held and stamped (leasehold >= 0.2 stamps every lease). */
  owner: string | null;
  /** When the holder asked for the lock (epoch ms, the holder's clock). */
  since: number | null;
  /** Remaining TTL in ms when held (-1: no TTL). */
  ttl: number | null;
  /** The last fencing token issued for this name (0 when never acquired). */
  fencingToken: string;
}

/** One read of a mutex, through the inspection script (src/scripts/inspect.lua). */
export async function readState(driver: Driver, conn: Connection, name: string): Promise<LockState> {
  const state = await readOne(driver, conn.prefix, name, 'mutex', 1);
  const holder = state?.holders[0];
  return {
    name,
    key: keyFor(conn.prefix, name),
    held: holder !== undefined,
    token: holder?.token ?? null,
    owner: holder?.owner ?? null,
    since: holder?.since ?? null,
    ttl: holder?.ttlLeft ?? null,
    fencingToken: String(state?.lastFencingToken ?? 0n),
  };
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

export function formatMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1_000)} s`;
}

/**
 * Resolves on SIGINT or SIGTERM (the long-running views: watch, top, dashboard), or when `other`
 * is called (top's q key); the handlers are removed either way.
 */
export function untilStopped(other?: (stop: () => void) => () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    let undo = (): void => {};
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      undo();
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    if (other !== undefined) undo = other(stop);
  });
}
