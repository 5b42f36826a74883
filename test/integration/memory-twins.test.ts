// The in-memory backend's JS twins of the Lua scripts against the scripts themselves: the same
// calls, in the same order, on a real Redis and on a MemoryBackend must get the same replies
// (up to times, which differ by the milliseconds between the two runs, and stream IDs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MemoryBackend } from '../../src/index.ts';
import { MemoryDriver } from '../../src/memory/driver.ts';
import { uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();

/** One step: a script with KEYS (as suffixes of the run's prefix) and ARGV, or a plain command. */
type Step = { script: string; keys: string[]; args: string[] } | { command: string[] };

const s = (script: string, keys: string[], ...args: (string | number)[]): Step => ({
  script,
  keys,
  args: args.map(String),
});
const c = (...args: (string | number)[]): Step => ({ command: args.map(String) });

const TTL = 10_000;
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

/** Turn-key prefixes are ARGV: `@` stands for the run's prefix. */
const steps: Step[] = [
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
];

/** Replies as comparable values: times within 250 ms of each other match, stream IDs match. */
function same(redisReply: unknown, memoryReply: unknown, where: string): void {
  if (typeof redisReply === 'number' && typeof memoryReply === 'number' && redisReply > 1_000) {
    assert.ok(Math.abs(redisReply - memoryReply) <= 250, `${where}: ${redisReply} vs ${memoryReply}`);
    return;
  }
  if (typeof redisReply === 'string' && /^\d{13,}-\d+$/.test(redisReply)) {
    assert.match(String(memoryReply), /^\d{13,}-\d+$/, where);
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

test('the memory twins of every Lua script reply as the scripts do on Redis', async () => {
  const prefix = uniquePrefix('twins');
  const backend = new MemoryBackend();
  const memory = new MemoryDriver(backend, true);
  await memory.connect();
  const withPrefix = (arg: string) => (arg.startsWith('@') ? `${prefix}:${arg.slice(1)}` : arg);
  const fullKey = (suffix: string) => `${prefix}:${suffix}`;
  try {
    for (const [i, step] of steps.entries()) {
      let onRedis: unknown;
      let inMemory: unknown;
      if ('command' in step) {
        const [name = '', key = '', ...rest] = step.command;
        const args = [name, fullKey(key), ...rest];
        onRedis = await command(redis.server.port, args);
        inMemory = await memory.command(args);
      } else {
        const source = readFileSync(new URL(`../../src/scripts/${step.script}.lua`, import.meta.url), 'utf8');
        const keys = step.keys.map(fullKey);
        const args = step.args.map(withPrefix);
        onRedis = await command(redis.server.port, ['EVAL', source, keys.length, ...keys, ...args]);
        const script = { name: step.script, source, sha: '' };
        inMemory = await memory.eval({ script, keys, args });
      }
      same(onRedis, inMemory, `step ${i} ${JSON.stringify(step)}`);
    }
  } finally {
    await memory.close();
  }
});
