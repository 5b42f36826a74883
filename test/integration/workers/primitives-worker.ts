// A child process for the multi-process tests of the semaphore, read-write lock, fair lock and
// election. It records what it holds in Redis through its own plain client, independent of
// leasehold, so the parent can check exclusion without trusting the library under test.
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, ttl] = process.argv.slice(2) as [string, string, string];
const channel = parentChannel();
const checker = createClient({ url });
await checker.connect();
const lh = await Leasehold.connect({
  url,
  prefix,
  ttl: Number(ttl),
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
  notifications: (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as 'tracking' | 'polling',
  retryDelay: 10,
});

// INCRBY a counter and return the values of every key in KEYS after that, atomically.
const ENTER = `local v = redis.call('INCRBY', KEYS[1], ARGV[1])
local out = {v}
for i = 2, #KEYS do out[i] = tonumber(redis.call('GET', KEYS[i]) or '0') end
return out`;
const check = (keys: string[], by: number) =>
  checker.eval(ENTER, { keys: keys.map((k) => `${prefix}:check:${k}`), arguments: [String(by)] }) as Promise<
    number[]
  >;
const leave = (key: string, by: number) => checker.decrBy(`${prefix}:check:${key}`, by);

channel.onMessage(async (m) => {
  const name = String(m['name']);
  const iterations = Number(m['iterations'] ?? 0);
  const hold = Number(m['hold'] ?? 0);
  try {
    switch (m['type']) {
      case 'semaphore': {
        const sem = lh.semaphore(name, { limit: Number(m['limit']) });
        const permits = Number(m['permits'] ?? 1);
        let max = 0;
        for (let i = 0; i < iterations; i++) {
          const lease = await sem.acquire({ permits, timeout: 20_000 });
          const [inside] = await check(['permits'], permits);
          max = Math.max(max, inside!);
          await sleep(hold);
          await leave('permits', permits);
          await lease.release();
        }
        channel.send({ type: 'done', max });
        break;
      }
      case 'semaphore-hold': {
        await lh
          .semaphore(name, { limit: Number(m['limit']) })
          .acquire({ permits: Number(m['permits'] ?? 1) });
        channel.send({ type: 'held' });
        break;
      }
      case 'rw': {
        const rw = lh.readWriteLock(name);
        let bad = 0;
        for (let i = 0; i < iterations; i++) {
          if (m['mode'] === 'write') {
            const lease = await rw.write({ timeout: 20_000 });
            const [writers, readers] = await check(['writers', 'readers'], 1);
            if (writers !== 1 || readers !== 0) bad += 1;
            await sleep(hold);
            await leave('writers', 1);
            await lease.release();
          } else {
            const lease = await rw.read({ timeout: 20_000 });
            const [, writers] = await check(['readers', 'writers'], 1);
            if (writers !== 0) bad += 1;
            await sleep(hold);
            await leave('readers', 1);
            await lease.release();
          }
        }
        channel.send({ type: 'done', bad });
        break;
      }
      case 'fair': {
        const lock = lh.fairLock(name);
        const pending = lock.acquire({ timeout: 20_000 });
        // The wait has joined the queue once its first attempt went out; give it that round trip.
        await sleep(Number(m['settle'] ?? 30));
        channel.send({ type: 'queued', id: m['id'] });
        const lease = await pending;
        await checker.rPush(`${prefix}:check:order`, String(m['id']));
        channel.send({ type: 'acquired', id: m['id'] });
        await sleep(hold);
        await lease.release();
        break;
      }
      case 'campaign': {
        const election = lh.election(name);
        let bad = 0;
        const fences: string[] = [];
        for (let i = 0; i < iterations; i++) {
          const term = await election.campaign(String(process.pid), { timeout: 20_000 });
          const [leaders] = await check(['leaders'], 1);
          if (leaders !== 1) bad += 1;
          fences.push(String(term.fencingToken));
          channel.send({ type: 'elected', fence: String(term.fencingToken), bad });
          await sleep(hold);
          // The parent may SIGKILL us here; otherwise resign.
          await leave('leaders', 1);
          await term.resign();
        }
        channel.send({ type: 'done', bad, fences });
        break;
      }
    }
  } catch (error) {
    channel.send({ type: 'error', message: String(error) });
  }
});
channel.send({ type: 'ready' });
