import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { type ConnectOptions, Leasehold } from '../../src/index.ts';
import { FaultProxy } from './proxy.ts';
import { RedisServer } from './redis-server.ts';

/** The driver and notification mode this test run uses (scripts/test.mjs runs the matrix). */
export const testDriver = (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as
  | 'node-redis'
  | 'ioredis'
  | 'glide';
export const testNotifications = (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as
  | 'tracking'
  | 'polling';
export const tracking = testNotifications === 'tracking';
/** A label for test names, e.g. "ioredis/tracking". */
export const mode = `${testDriver}/${testNotifications}`;

let counter = 0;
/** A key prefix no other test (or test process) uses. */
export function uniquePrefix(label = 't'): string {
  counter += 1;
  return `lh-${label}-${process.pid}-${counter}`;
}

/** Connects with this run's driver and notification mode, a unique prefix unless one is given. */
export function connect(server: RedisServer, options: ConnectOptions = {}): Promise<Leasehold> {
  return Leasehold.connect({
    url: server.url,
    driver: testDriver,
    notifications: testNotifications,
    prefix: uniquePrefix(),
    ...(tracking ? {} : { retryDelay: 20 }),
    ...options,
  });
}

/** Resolves with the signal's reason once it aborts. */
export function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
  );
}

/** Rejects when `promise` has not settled within `ms`: a clear failure instead of a hung test. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** The Redis key of a mutex, as the library lays it out. */
export const lockKey = (prefix: string, name: string): string => `${prefix}:{${name}}`;

/** What `useRedis()` gives a test file. */
export interface TestRedis {
  /** The file's own redis-server (started in `before`). */
  readonly server: RedisServer;
  /** A fault proxy in front of it, when `useRedis({ proxy: true })` asked for one. */
  readonly proxy: FaultProxy;
  /** A Leasehold on it in this run's mode, closed after the file's tests. */
  instance(prefix: string, ttl?: number, options?: ConnectOptions): Promise<Leasehold>;
}

/** What a test file needs around its redis-server. */
export interface UseRedisOptions {
  /** Start a FaultProxy in front of the server (`redis.proxy`), stopped before it. */
  proxy?: boolean;
  /** Runs once the server is up, before the file's tests (an ACL user, say). */
  prepare?: (server: RedisServer) => Promise<unknown>;
}

/**
 * One redis-server for the calling test file, started before its tests and stopped after them,
 * and the Leasehold instances made with `instance()`, closed before it stops. Call at top level.
 */
export function useRedis(options: UseRedisOptions = {}): TestRedis {
  let server: RedisServer | undefined;
  let proxy: FaultProxy | undefined;
  const open: Leasehold[] = [];
  before(async () => {
    server = await RedisServer.start();
    if (options.proxy === true) proxy = await FaultProxy.start(server.port);
    await options.prepare?.(server);
  });
  after(async () => {
    await Promise.all(open.map((lh) => lh.close()));
    await proxy?.stop();
    await server?.stop();
  });
  const running = (): RedisServer => {
    if (server === undefined)
      throw new Error('useRedis(): the server starts in before(); use it inside tests');
    return server;
  };
  return {
    get server() {
      return running();
    },
    get proxy() {
      if (proxy === undefined) throw new Error('useRedis({ proxy: true }) starts the proxy in before()');
      return proxy;
    },
    async instance(prefix, ttl = 1_000, options = {}) {
      const lh = await connect(running(), { prefix, ttl, ...options });
      open.push(lh);
      return lh;
    },
  };
}

/** The bookkeeping counts of `lh.stats` (leak checks compare them with IDLE). */
export function counts(lh: Leasehold): {
  held: number;
  waiting: number;
  watchedKeys: number;
  renewing: number;
} {
  const { held, waiting, watchedKeys, renewing } = lh.stats;
  return { held, waiting, watchedKeys, renewing };
}

/** `counts()` of an instance that holds, waits for and watches nothing. */
export const IDLE = { held: 0, waiting: 0, watchedKeys: 0, renewing: 0 };

/**
 * Asserts that `lh` comes back to IDLE once every lease is released. It may take one round trip:
 * an attempt that was on its way when a direct grant handed the waiter its lease keeps the key
 * watched until its reply (found the grant, handed nothing out) arrives, and that reply can reach
 * the process after the caller's release does (polling, CI: one run in 40).
 */
export async function assertIdle(lh: Leasehold, within = 2_000): Promise<void> {
  const deadline = Date.now() + within;
  while (!isDeepStrictEqual(counts(lh), IDLE) && Date.now() < deadline) await sleep(5);
  assert.deepEqual(counts(lh), IDLE);
}
