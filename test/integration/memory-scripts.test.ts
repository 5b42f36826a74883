// The memory backend runs the very Lua scripts Redis runs (src/memory/lua.ts). This file checks
// that it runs them the same: the same calls, in the same order, on a real Redis and on a
// MemoryBackend must get the same replies (up to server times, which differ by the milliseconds
// between the two runs, and stream IDs), and leave client tracking armed for the same keys. Every
// script of src/scripts/ runs here, and a few inline ones pin Redis's Lua conventions.
// Tracking is compared exactly on servers that follow the read-keys rule the backend emulates
// (Redis >= 7.2, Valkey: `npm run test:servers`); on Redis 7.0, which arms every declared key,
// the backend must arm a subset of what the server arms.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { MemoryBackend } from '../../src/index.ts';
import { MemoryDriver } from '../../src/memory/driver.ts';
import { scriptSource } from '../../src/scripts/index.ts';
import { uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { redisServerVersion, serverTrackingRule } from '../harness/server-binary.ts';

const redis = useRedis();

/**
 * A script of src/scripts (by name) or inline Lua, with KEYS as suffixes of the run's prefix, run
 * on the tracked connection; or a plain command, run on another connection (another program).
 */
type Step = { script: string; source: string; keys: string[]; args: string[] } | { command: string[] };

const s = (script: string, keys: string[], ...args: (string | number)[]): Step => ({
  script,
  source: scriptSource(script),
  keys,
  args: args.map(String),
});
const lua = (source: string, ...keys: string[]): Step => ({ script: 'inline', source, keys, args: [] });
const c = (...args: (string | number)[]): Step => ({ command: args.map(String) });

const TTL = 10_000;
const mutex = ['m', 'm:fence'];
const sem = ['sem', 'sem:fence', 'sem:released'];
const rw = ['rw:writer', 'rw:readers', 'rw:waiting', 'rw:fence', 'rw:released'];
const fair = (token: string) => [
  'fair',
  'fair:queue',
  'fair:deadlines',
  'fair:arrivals',
  'fair:fence',
  `turn:${token}`,
];
const fairOut = ['fair', 'fair:queue', 'fair:deadlines'];
const el = ['el', 'el:fence', 'el:log'];
const multi = ['ma', 'ma:fence', 'mb', 'mb:fence', 'mc', 'mc:fence'];

/** Turn-key prefixes are ARGV: `@` stands for the run's prefix. */
const steps: Step[] = [
  // mutex: acquire, busy, extend, takeover, release; the fence above a counter set ahead
  s('acquire', mutex, 'o1', TTL),
  s('acquire', mutex, 'o2', TTL),
  s('extend', ['m'], 'o1', TTL),
  s('extend', ['m'], 'o2', TTL),
  s('force', mutex, 'o2', TTL),
  s('release', ['m'], 'o1'),
  s('release', ['m'], 'o2'),
  s('release', ['m'], 'o2'),
  c('SET', 'm:fence', '5000000000000000'),
  s('acquire', mutex, 'o3', TTL),
  c('GET', 'm:fence'),
  s('force', mutex, 'o4', TTL),
  c('SET', 'm', 'o4'),
  s('extend', ['m'], 'o4', TTL),
  c('PTTL', 'm'),
  // quorum mode
  s('extend', ['m'], 'o4', TTL),
  s('extend', ['m'], 'o5', TTL),
  c('DEL', 'm'),
  s('extend', ['m'], 'o4', TTL),
  s('quorum-restore', mutex, 'o4', TTL, '6000000000000000'),
  s('quorum-restore', mutex, 'o5', TTL, '7000000000000000'),
  c('GET', 'm:fence'),
  s('fence-raise', mutex, 'o4', '5'),
  s('fence-raise', mutex, 'o5', '8000000000000000'),
  c('GET', 'm:fence'),
  s('inspect', mutex, 'mutex', 10),
  s('canary', ['canary:read', 'canary:written'], TTL),
  // multiLock: granted (one fence per name), blocked by a plain holder, the fence above a counter
  s('multi-acquire', multi, 'x1', TTL),
  s('multi-acquire', multi, 'x2', TTL),
  s('release', ['ma'], 'x1'),
  s('acquire', ['mb', 'mb:fence'], 'x3', TTL),
  s('multi-acquire', multi, 'x2', TTL),
  c('EXISTS', 'ma'),
  s('release', ['mb'], 'x1'),
  s('release', ['mb'], 'x3'),
  s('release', ['mc'], 'x1'),
  c('SET', 'mc:fence', '5000000000000000'),
  s('multi-acquire', multi, 'x4', TTL),
  c('PTTL', 'mb'),
  // semaphore
  s('semaphore-acquire', sem, 't1', 2, 3, TTL),
  s('semaphore-acquire', sem, 't2', 2, 3, TTL),
  s('semaphore-count', ['sem']),
  s('semaphore-extend', ['sem'], 't1', 2, TTL),
  s('semaphore-extend', ['sem'], 't2', 2, TTL),
  s('semaphore-release', ['sem', 'sem:released'], 't1', 2),
  s('semaphore-release', ['sem', 'sem:released'], 't1', 2),
  s('semaphore-count', ['sem']),
  c('EXISTS', 'sem'),
  c('GET', 'sem:released'),
  s('inspect', ['sem', 'sem:fence'], 'semaphore', 10),
  c('ZADD', 'sem', 1, 'old:1'),
  s('semaphore-acquire', sem, 't3', 3, 3, TTL),
  c('GET', 'sem:released'),
  // read-write lock
  s('rwlock-read', rw, 'r1', TTL),
  s('rwlock-write', rw, 'w1', TTL, '1'),
  s('rwlock-read', rw, 'r2', TTL),
  s('rwlock-withdraw', ['rw:waiting'], 'w1'),
  s('rwlock-read', rw, 'r2', TTL),
  s('rwlock-read-extend', ['rw:readers'], 'r1', TTL),
  s('rwlock-read-extend', ['rw:readers'], 'nobody', TTL),
  s('rwlock-read-release', ['rw:readers', 'rw:released'], 'r1'),
  s('rwlock-read-release', ['rw:readers', 'rw:released'], 'r1'),
  s('rwlock-write', rw, 'w2', TTL, '0'),
  s('rwlock-read-release', ['rw:readers', 'rw:released'], 'r2'),
  s('rwlock-write', rw, 'w2', TTL, '0'),
  s('inspect', ['rw:writer', 'rw:readers', 'rw:waiting', 'rw:fence'], 'rwlock', 10),
  s('rwlock-read', rw, 'r3', TTL),
  s('extend', ['rw:writer'], 'w2', TTL),
  s('release', ['rw:writer'], 'w2'),
  c('ZCARD', 'rw:waiting'),
  c('ZADD', 'rw:readers', 1, 'old'),
  s('rwlock-write', rw, 'w3', TTL, '1'),
  c('GET', 'rw:released'),
  c('ZADD', 'rw:readers', 1, 'old'),
  s('rwlock-read-extend', ['rw:readers'], 'old', TTL),
  // fair lock
  s('fair-acquire', fair('f1'), 'f1', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f2'), 'f2', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f3'), 'f3', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f4'), 'f4', TTL, TTL, '@turn:', '0'),
  s('inspect', ['fair', 'fair:fence', 'fair:queue', 'fair:deadlines'], 'fair', 10),
  s('fair-withdraw', [...fairOut, 'turn:f3'], 'f3', '@turn:'),
  s('fair-release', fairOut, 'f1', '@turn:'),
  c('GET', 'turn:f2'),
  s('fair-release', fairOut, 'f1', '@turn:'),
  s('fair-acquire', fair('f2'), 'f2', TTL, TTL, '@turn:', '1'),
  s('fair-release', fairOut, 'f2', '@turn:'),
  s('fair-withdraw', [...fairOut, 'turn:f9'], 'f9', '@turn:'),
  c('ZCARD', 'fair:queue'),
  s('fair-acquire', fair('f5'), 'f5', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f6'), 'f6', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f7'), 'f7', TTL, TTL, '@turn:', '1'),
  c('DEL', 'fair'),
  s('fair-withdraw', [...fairOut, 'turn:f6'], 'f6', '@turn:'),
  c('GET', 'turn:f7'),
  s('fair-withdraw', [...fairOut, 'turn:f7'], 'f7', '@turn:'),
  c('SET', 'fair', 'ghost', 'PX', TTL),
  s('fair-acquire', fair('f8'), 'f8', TTL, TTL, '@turn:', '1'),
  c('ZADD', 'fair:queue', 0, 'dead'),
  c('ZADD', 'fair:deadlines', 1, 'dead'),
  c('DEL', 'fair'),
  s('fair-acquire', fair('f9'), 'f9', TTL, TTL, '@turn:', '1'),
  c('GET', 'turn:f8'),
  s('fair-acquire', fair('f8'), 'f8', TTL, TTL, '@turn:', '1'),
  c('ZRANGE', 'fair:queue', 0, -1),
  // election
  s('election-campaign', el, 'c1', 'a', TTL, 1000),
  s('election-campaign', el, 'c2', 'b', TTL, 1000),
  s('inspect', ['el', 'el:fence'], 'election', 10),
  s('election-observe', ['el', 'el:log'], '', 100, 1000),
  s('election-proclaim', ['el', 'el:log'], 'c1', 'a2', 1000),
  s('election-proclaim', ['el', 'el:log'], 'c2', 'b2', 1000),
  s('election-extend', ['el'], 'c1', TTL),
  s('election-extend', ['el'], 'c2', TTL),
  c('HMGET', 'el', 'value', 'fence'),
  s('election-resign', ['el', 'el:log'], 'c1', 1000),
  s('election-resign', ['el', 'el:log'], 'c1', 1000),
  s('election-campaign', el, 'c2', 'b', TTL, 1000),
  c('DEL', 'el'),
  s('election-observe', ['el', 'el:log'], '0-0', 100, 1000),
  s('election-observe', ['el', 'el:log'], '0-0', 2, 1000),
  // quorum fencing
  s('fence-raise', ['q', 'q:fence'], 'o', '42'),
  c('SET', 'q', 'o'),
  s('fence-raise', ['q', 'q:fence'], 'o', '7'),
  c('GET', 'q:fence'),
  // Redis's Lua conventions: reply and argument conversions, status and error replies, globals
  lua("return {1.9, -1.9, true, false, 'a', nil, 'after nil'}"),
  lua("return redis.call('SET', KEYS[1], 10 / 2) and redis.call('GET', KEYS[1])", 'n'),
  lua(
    "return {type(redis.call('SET', KEYS[1], 'v')), type(redis.call('GET', KEYS[2])), redis.call('SET', KEYS[1], 'w', 'NX')}",
    'n',
    'none',
  ),
  lua(
    "return {redis.call('INCR', KEYS[1]) .. '', tostring(2 ^ 53), string.format('%d', 7), redis.call('HSET', KEYS[2], 'f', 1.5)}",
    'count',
    'h',
  ),
  lua("return redis.call('HGET', KEYS[1], 'f')", 'h'),
  lua(
    "return {redis.call('ZADD', KEYS[1], 1.25, 'a'), redis.call('ZSCORE', KEYS[1], 'a'), redis.call('TYPE', KEYS[1])}",
    'z',
  ),
  lua("return redis.call('TYPE', KEYS[1])", 'z'),
  lua("return redis.status_reply('FINE')"),
  lua("return redis.error_reply('MY failure')"),
  lua("return {1, redis.pcall('SET', KEYS[1], 'v', 'BOGUS')}", 'n'),
  lua("return redis.pcall('GET', KEYS[1])['err']", 'h'),
  lua("return redis.call('SET', KEYS[1], 'v', 'BOGUS')", 'n'),
  lua('return nothing'),
  lua('created = 1'),
  lua('return +'),
  lua("return unpack({'one', 'two'})"),
];

/**
 * Run by the other connection after every script: writes each key and puts it back as it was, so
 * that the tracked connection hears of every key the script left armed, and only of those.
 */
const TOUCH = `
for _, key in ipairs(KEYS) do
  local ttl = redis.call('PTTL', key)
  if ttl == -2 then
    redis.call('SET', key, '')
    redis.call('DEL', key)
  elseif ttl == -1 then
    redis.call('PEXPIRE', key, 60000)
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIRE', key, ttl)
  end
end
return 'OK'`;

/** Replies as comparable values: times within 250 ms of each other match, stream IDs match. */
function same(redisReply: unknown, memoryReply: unknown, where: string): void {
  // Fencing tokens seeded from the server's clock in microseconds (acquire.lua replies with an integer).
  if (typeof redisReply === 'number' && typeof memoryReply === 'number' && redisReply > 1e15) {
    assert.ok(Math.abs(redisReply - memoryReply) <= 250_000, `${where}: ${redisReply} vs ${memoryReply}`);
    return;
  }
  if (typeof redisReply === 'number' && typeof memoryReply === 'number' && redisReply > 1_000) {
    assert.ok(Math.abs(redisReply - memoryReply) <= 250, `${where}: ${redisReply} vs ${memoryReply}`);
    return;
  }
  // Mutex fencing tokens start from the server's clock in microseconds.
  if (typeof redisReply === 'string' && /^1\d{15}$/.test(redisReply)) {
    assert.match(String(memoryReply), /^1\d{15}$/, where);
    assert.ok(
      Math.abs(Number(redisReply) - Number(memoryReply)) <= 250_000,
      `${where}: ${redisReply} vs ${memoryReply}`,
    );
    return;
  }
  // Expiry scores and deadlines in server ms (inspect.lua returns them with their members).
  if (typeof redisReply === 'string' && /^1\d{12}$/.test(redisReply)) {
    assert.match(String(memoryReply), /^1\d{12}$/, where);
    assert.ok(
      Math.abs(Number(redisReply) - Number(memoryReply)) <= 250,
      `${where}: ${redisReply} vs ${memoryReply}`,
    );
    return;
  }
  if (typeof redisReply === 'string' && /^\d{13,}-\d+$/.test(redisReply)) {
    assert.match(String(memoryReply), /^\d{13,}-\d+$/, where);
    return;
  }
  if (redisReply instanceof Error) {
    assert.ok(memoryReply instanceof Error, `${where}: an error, got ${JSON.stringify(memoryReply)}`);
    assert.equal(memoryReply.message, redisReply.message, where);
    return;
  }
  if (Array.isArray(redisReply)) {
    assert.ok(Array.isArray(memoryReply), `${where}: an array, got ${JSON.stringify(memoryReply)}`);
    assert.equal(memoryReply.length, redisReply.length, `${where}: ${JSON.stringify(memoryReply)}`);
    for (const [i, r] of redisReply.entries()) same(r, memoryReply[i], `${where}[${i}]`);
    return;
  }
  assert.deepEqual(memoryReply, redisReply, where);
}

/** A reply, or the error replied, as a plain Error with the server's message. */
async function settle(reply: Promise<unknown>): Promise<unknown> {
  try {
    return plain(await reply);
  } catch (error) {
    return new Error((error as Error).message);
  }
}

/** node-redis's ErrorReply inside an array as a plain Error, like the memory driver's. */
const plain = (reply: unknown): unknown =>
  Array.isArray(reply) ? reply.map(plain) : reply instanceof Error ? new Error(reply.message) : reply;

test(`the memory backend runs every Lua script as ${redisServerVersion()} does: replies and armed keys`, async () => {
  const rule = serverTrackingRule();
  const prefix = uniquePrefix('lua');
  const full = (suffix: string) => `${prefix}:${suffix}`;
  const withPrefix = (arg: string) => (arg.startsWith('@') ? `${prefix}:${arg.slice(1)}` : arg);
  const short = (key: string) => key.slice(prefix.length + 1);

  // Redis: a tracked connection as leasehold's own (RESP3, NOLOOP) and a plain one.
  const tracked = createClient({ url: redis.server.url, RESP: 3, emitInvalidate: true });
  const other = createClient({ url: redis.server.url });
  const redisHeard: string[] = [];
  tracked.on('invalidate', (key: unknown) => redisHeard.push(key === null ? '*' : short(String(key))));
  // Memory: the same two connections to one store.
  const backend = new MemoryBackend();
  const memory = new MemoryDriver(backend, true);
  const memoryOther = new MemoryDriver(backend, false);
  const memoryHeard: string[] = [];
  memory.setHandlers({
    invalidate: (keys) => memoryHeard.push(...(keys === null ? ['*'] : keys.map(short))),
    reset() {},
    disconnected() {},
    proven() {},
  });
  await Promise.all([tracked.connect(), other.connect(), memory.connect(), memoryOther.connect()]);
  const touch = { name: 'touch', source: TOUCH, sha: '' };
  try {
    await tracked.sendCommand(['CLIENT', 'TRACKING', 'ON', 'NOLOOP']);
    const covered = new Set<string>();
    for (const [i, step] of steps.entries()) {
      const where = `step ${i} ${JSON.stringify({ ...step, source: undefined })}`;
      let onRedis: unknown;
      let inMemory: unknown;
      if ('command' in step) {
        const [name = '', key = '', ...rest] = step.command;
        const args = [name, full(key), ...rest];
        onRedis = await settle(other.sendCommand(args));
        inMemory = await settle(memoryOther.command(args));
      } else {
        // Scripts compare a key's PTTL with a ttl (`if PTTL < ttl then PEXPIRE`): let a
        // millisecond pass on both, or the faster memory run could skip a PEXPIRE Redis makes.
        await sleep(2);
        covered.add(step.script);
        const keys = step.keys.map(full);
        const args = step.args.map(withPrefix);
        const evalArgs = ['EVAL', step.source, String(keys.length), ...keys, ...args];
        onRedis = await settle(tracked.sendCommand(evalArgs));
        inMemory = await settle(
          memory.eval({ script: { name: step.script, source: step.source, sha: '' }, keys, args }),
        );
        await other.sendCommand(['EVAL', TOUCH, String(keys.length), ...keys]);
        await memoryOther.eval({ script: touch, keys, args: [] });
      }
      same(onRedis, inMemory, where);
      // Pushes for the touch were sent before the PING's reply; the memory backend's are microtasks.
      await tracked.sendCommand(['PING']);
      await new Promise((resolve) => setImmediate(resolve));
      const fromRedis = redisHeard.splice(0).sort();
      const fromMemory = memoryHeard.splice(0).sort();
      if (rule === 'read-keys') assert.deepEqual(fromMemory, fromRedis, `${where}: armed keys`);
      else
        for (const key of fromMemory)
          assert.ok(fromRedis.includes(key), `${where}: ${key} armed in memory only`);
    }
    const scripts = readdirSync(new URL('../../src/scripts/', import.meta.url)).flatMap((f) =>
      f.endsWith('.lua') ? [f.slice(0, -4)] : [],
    );
    assert.deepEqual(
      scripts.filter((name) => !covered.has(name)),
      [],
      'scripts this test does not run',
    );
  } finally {
    tracked.destroy();
    other.destroy();
    await Promise.all([memory.close(), memoryOther.close()]);
  }
});
