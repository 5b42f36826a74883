// Fuzzing of the public entry points with bad input: each call must fail with a TypeError that
// says "leasehold:" and names what was wrong, synchronously or as a rejection, never crash the
// process, and leave no key behind.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { isFenceMark } from '../../src/base/fence-mark.ts';
import { type Leasehold, Leasehold as LeaseholdClass } from '../../src/index.ts';
import { connect, mode, uniquePrefix } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

let server: RedisServer;
let lh: Leasehold;
let prefix: string;
// connect() falls back to REDIS_URL, then 127.0.0.1:6379: point the fallback at a port nobody
// listens on, so that an option wrongly taken for "absent" can never reach a real Redis.
process.env['REDIS_URL'] = 'redis://127.0.0.1:1';
before(async () => {
  server = await RedisServer.start();
  prefix = uniquePrefix('fuzz');
  lh = await connect(server, { prefix, ttl: 2_000 });
});
after(async () => {
  await lh.close();
  await server.stop();
});

/** Values that are not a valid lock name. */
const badName = fc.oneof(
  fc.constant(''),
  fc.string({ minLength: 1025, maxLength: 1100 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.bigInt(),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.object({ maxDepth: 1 }),
  fc.constant(Symbol('x')),
);

/** Values that are not a valid duration in ms (ttl). */
const badDuration = fc.oneof(
  fc.constantFrom(0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 31, 1e300),
  fc.integer({ max: 0 }),
  fc.string(),
  fc.bigInt(),
  fc.constant(null),
  fc.boolean(),
);

/** Values that are not a valid timeout (>= 0 or Infinity). */
const badTimeout = fc.oneof(
  fc.constantFrom(-1, Number.NaN, Number.NEGATIVE_INFINITY),
  fc.integer({ max: -1 }),
  fc.string(),
  fc.constant(null),
  fc.bigInt(),
);

/** Option objects with at least one bad entry, or not an object at all. */
const badAcquireOptions = fc.oneof(
  fc.record({ ttl: badDuration }),
  fc.record({ timeout: badTimeout }),
  fc.record({ signal: fc.oneof(fc.constant(null), fc.string(), fc.object({ maxDepth: 0 })) }),
  fc.record({ tll: fc.anything() }),
  fc.oneof(fc.constant(null), fc.integer(), fc.string(), fc.array(fc.anything(), { maxLength: 2 })),
);

const badConnectOptions = fc.oneof(
  fc.record({
    url: fc.oneof(
      fc.string().filter((s) => !/^rediss?:\/\//.test(s)),
      fc.integer(),
    ),
  }),
  fc.record({ ttl: badDuration }),
  fc.record({ retryDelay: badDuration }),
  fc.record({ prefix: fc.oneof(fc.constant(''), fc.constant('a{b}'), fc.integer()) }),
  fc.record({ notifications: fc.string().filter((s) => s !== 'tracking' && s !== 'polling') }),
  fc.record({ driver: fc.string().filter((s) => s !== 'node-redis' && s !== 'ioredis') }),
  fc.record({ connectTimeout: fc.oneof(badTimeout, fc.constant(0)) }),
  fc.record({ client: fc.oneof(fc.integer(), fc.string(), fc.object({ maxDepth: 0 })) }),
  fc.record({ nodes: fc.oneof(fc.string(), fc.integer(), fc.constant([])) }),
  fc.record({ unknownOption: fc.anything() }),
  fc.oneof(fc.constant(null), fc.integer(), fc.string()),
);

/** Runs `call`; it must throw or reject with a TypeError whose message starts with "leasehold:". */
async function expectTypeError(what: string, call: () => unknown): Promise<void> {
  let outcome: unknown;
  try {
    outcome = await call();
    // Accepted by mistake: do not leave a connection (or a lease) open behind the failure.
    if (outcome instanceof LeaseholdClass) await outcome.close();
  } catch (error) {
    assert.ok(error instanceof TypeError, `${what}: threw ${String(error)} instead of a TypeError`);
    assert.match(error.message, /^leasehold: /, `${what}: message "${error.message}"`);
    return;
  }
  assert.fail(`${what}: accepted bad input (returned ${typeof outcome})`);
}

async function strandedKeys(): Promise<string[]> {
  const keys = (await command(server.port, ['KEYS', `${prefix}:*`])) as string[];
  return keys.filter((key) => !key.endsWith(':fence') && !isFenceMark(key));
}

describe(`bad input at every entry point (${mode})`, () => {
  test('Leasehold.connect() rejects bad options with a TypeError, without connecting', async () => {
    await fc.assert(
      fc.asyncProperty(badConnectOptions, async (options) => {
        // Never let an option that slipped through reach a default Redis (127.0.0.1:6379).
        const safe =
          typeof options === 'object' && options !== null && !('url' in options)
            ? { url: server.url, ...options }
            : options;
        await expectTypeError('connect', () => LeaseholdClass.connect(safe as never));
      }),
      { numRuns: 150 },
    );
  });

  test('null for url, prefix, notifications, driver or onDisconnect is a TypeError, not "use the default"', async () => {
    for (const key of ['url', 'prefix', 'notifications', 'driver', 'onDisconnect']) {
      const options = key === 'url' ? { url: null, connectTimeout: 200 } : { url: server.url, [key]: null };
      await expectTypeError(`connect({ ${key}: null })`, () => LeaseholdClass.connect(options as never));
    }
  });

  test('mutex calls reject bad names and options with a TypeError', async () => {
    const calls: [string, (name: unknown, options: unknown) => unknown][] = [
      ['acquire', (n, o) => lh.acquire(n as string, o as never)],
      ['tryAcquire', (n, o) => lh.tryAcquire(n as string, o as never)],
      ['forceAcquire', (n, o) => lh.forceAcquire(n as string, o as never)],
      ['withLock', (n, o) => lh.withLock(n as string, async () => {}, o as never)],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.nat(calls.length - 1),
        fc.oneof(
          fc.record({ name: badName, options: fc.constant(undefined) }),
          fc.record({ name: fc.constant('good'), options: badAcquireOptions }),
        ),
        async (which, { name, options }) => {
          const [label, call] = calls[which]!;
          await expectTypeError(label, () => call(name, options));
        },
      ),
      { numRuns: 200 },
    );
    await expectTypeError('withLock without a function', () => lh.withLock('good', 'nope' as never));
    assert.deepEqual(await strandedKeys(), []);
  });

  test('lease.extend() rejects a bad ttl and keeps the lease', async () => {
    const lease = await lh.acquire('extend-fuzz');
    await fc.assert(
      fc.asyncProperty(badDuration, async (ttl) => {
        await expectTypeError('extend', () => lease.extend(ttl as number));
      }),
      { numRuns: 60 },
    );
    assert.equal(lease.lost, false);
    assert.equal(await lease.release(), true);
    assert.deepEqual(await strandedKeys(), []);
  });

  test('other primitives reject bad names and options with a TypeError', async () => {
    const factories: [string, (name: unknown) => unknown][] = [
      ['semaphore', (n) => lh.semaphore(n as string, { limit: 2 })],
      ['readWriteLock', (n) => lh.readWriteLock(n as string)],
      ['fairLock', (n) => lh.fairLock(n as string)],
      ['election', (n) => lh.election(n as string)],
    ];
    await fc.assert(
      fc.asyncProperty(fc.nat(factories.length - 1), badName, async (which, name) => {
        const [label, make] = factories[which]!;
        await expectTypeError(label, () => make(name));
      }),
      { numRuns: 120 },
    );
    const badLimit = fc.oneof(
      fc.constantFrom(0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY),
      fc.string(),
      fc.constant(null),
    );
    await fc.assert(
      fc.asyncProperty(badLimit, async (limit) => {
        await expectTypeError('semaphore limit', () => lh.semaphore('s', { limit } as never));
      }),
      { numRuns: 40 },
    );
    const sem = lh.semaphore('s', { limit: 2 });
    const rw = lh.readWriteLock('rw');
    const fair = lh.fairLock('f');
    const election = lh.election('e');
    const calls: [string, (options: unknown) => unknown][] = [
      ['semaphore.acquire', (o) => sem.acquire(o as never)],
      ['semaphore.tryAcquire', (o) => sem.tryAcquire(o as never)],
      ['rw.read', (o) => rw.read(o as never)],
      ['rw.write', (o) => rw.write(o as never)],
      ['fair.acquire', (o) => fair.acquire(o as never)],
      ['election.campaign', (o) => election.campaign('v', o as never)],
    ];
    await fc.assert(
      fc.asyncProperty(fc.nat(calls.length - 1), badAcquireOptions, async (which, options) => {
        const [label, call] = calls[which]!;
        await expectTypeError(label, () => call(options));
      }),
      { numRuns: 150 },
    );
    await expectTypeError('semaphore permits', () => sem.acquire({ permits: 3 }));
    await expectTypeError('campaign value', () => election.campaign(42 as never));
    assert.deepEqual(await strandedKeys(), []);
  });
});
