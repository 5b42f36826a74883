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
import { uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { steps } from '../harness/script-steps.ts';
import { electionSteps, jobSteps, noteSteps } from '../harness/script-steps-more.ts';
import { redisServerVersion, serverTrackingRule } from '../harness/server-binary.ts';

const redis = useRedis();

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
  // Expiry scores and deadlines in server ms (the inspect scripts return them with their members).
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
    // Redis names the script's SHA1 in a script error ("script: <sha>, on @user_script:1"), Valkey
    // 9 does not ("script: on @user_script:1"): the SHA1 is left out of the comparison.
    const unnamed = (message: string) => message.replace(/script: [0-9a-f]{40}, on /, 'script: on ');
    assert.equal(unnamed(memoryReply.message), unnamed(redisReply.message), where);
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
    for (const [i, step] of [...steps, ...electionSteps, ...jobSteps, ...noteSteps].entries()) {
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
