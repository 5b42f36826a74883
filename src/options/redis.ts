import type { DriverKind } from '../driver/types.ts';
/**
 * Which Redis, through which client library, under which key prefix: the checks that
 * `Leasehold.connect()` and the command line's `--redis`, `--driver` and `--prefix` share.
 */

import { redact } from '../base/redact.ts';
import { checkWellFormed, fail, MAX_NAME_LENGTH } from './check.ts';

/** The key namespace when none is given. */
export const DEFAULT_PREFIX = 'leasehold';

/** The Redis to use when no `url` is given (the CLI's `--redis` has the same default). */
export function defaultUrl(): string {
  return process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
}

/** `url`, or the CLI's `--redis`. */
export function checkUrl(value: unknown, option = 'url'): string {
  if (!isRedisUrl(value)) {
    // The value may carry a password: never echo it.
    const shown = typeof value === 'string' ? redact(value) : value;
    fail(option, 'a redis:// or rediss:// URL with a numeric port, if any', shown);
  }
  return value;
}

export type { DriverKind };

/** `driver`, or the CLI's `--driver`. */
export function checkDriver(value: unknown, option = 'driver'): DriverKind {
  if (value !== 'node-redis' && value !== 'ioredis' && value !== 'iovalkey' && value !== 'glide') {
    fail(option, '"node-redis", "ioredis", "iovalkey" or "glide"', value);
  }
  return value;
}

/** `prefix`, or the CLI's `--prefix`: braces would change the keys' hash tag. */
export function checkPrefix(value: unknown, option = 'prefix'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(option, `a non-empty string of at most ${MAX_NAME_LENGTH} characters`, value);
  }
  if (/[{}]/.test(value)) fail(option, 'free of "{" and "}" (they would change the hash tag)', value);
  return checkWellFormed(value, option);
}

/** Quorum mode wants an odd number (2m-1 >= 3) of distinct redis:// URLs. */
export function checkNodes(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const expected = 'an array of 3, 5, 7 … distinct redis:// URLs (independent masters)';
  if (!Array.isArray(value) || value.length < 3 || value.length % 2 === 0) fail('nodes', expected, value);
  for (const url of value) {
    if (!isRedisUrl(url)) fail('nodes', expected, typeof url === 'string' ? redact(url) : url);
  }
  if (new Set(value).size !== value.length) fail('nodes', expected, value);
  return value as string[];
}

/** A redis:// or rediss:// URL that parses, with a numeric port when it has one. */
function isRedisUrl(url: unknown): url is string {
  if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) return false;
  try {
    const parsed = new URL(url);
    return parsed.hostname !== '' && (parsed.port === '' || /^\d+$/.test(parsed.port));
  } catch {
    return false;
  }
}

/**
 * The client library the application has installed: node-redis, then ioredis, then iovalkey,
 * then Valkey GLIDE.
 * When none is, 'node-redis', whose connect() then says to install redis or ioredis.
 */
export function installedDriver(): DriverKind {
  for (const [pkg, driver] of [
    ['redis', 'node-redis'],
    ['ioredis', 'ioredis'],
    ['iovalkey', 'iovalkey'],
    ['@valkey/valkey-glide', 'glide'],
  ] as const) {
    try {
      import.meta.resolve(pkg);
      return driver;
    } catch {
      // not installed: try the next one
    }
  }
  return 'node-redis';
}

/**
 * Tells a node-redis client from an ioredis one and a Valkey GLIDE one by the methods each is
 * known for. An iovalkey client has ioredis's API and is told as 'ioredis' (the same driver;
 * `driver: 'iovalkey'` may name it).
 */
export function detectClient(client: unknown): 'node-redis' | 'ioredis' | 'glide' {
  if (client !== null && typeof client === 'object') {
    const c = client as Record<string, unknown>;
    // GlideClient and GlideClusterClient alike.
    if (typeof c['customCommand'] === 'function' && typeof c['invokeScript'] === 'function') return 'glide';
    if (typeof c['sendCommand'] === 'function' && typeof c['duplicate'] === 'function' && 'isOpen' in c) {
      return 'node-redis';
    }
    if (typeof c['pipeline'] === 'function' && typeof c['duplicate'] === 'function' && 'status' in c) {
      return 'ioredis';
    }
  }
  return fail('client', 'a node-redis, ioredis, iovalkey or Valkey GLIDE client', client);
}
