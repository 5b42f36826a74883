// JS twins of src/scripts/rwlock-*.lua, line for line: the same commands in the same order,
// so that tracking is armed and cleared as on Redis. The writer's extend and release are the
// mutex's scripts.
import { arg, int, key, type MemoryScript, type MemoryScriptCall, nowMs } from './script-call.ts';

/** KEYS of rwlock-read and rwlock-write. */
const keysOf = (c: MemoryScriptCall) => ({
  writer: key(c, 0),
  readers: key(c, 1),
  waiting: key(c, 2),
  fence: key(c, 3),
  released: key(c, 4),
});

export const rwlockScripts: [string, MemoryScript][] = [
  [
    'rwlock-read',
    (c) => {
      const now = nowMs(c);
      const ttl = Number(arg(c, 1));
      const { writer: writerKey, readers, waiting, fence, released } = keysOf(c);
      if ((c.call('ZREMRANGEBYSCORE', readers, '-inf', now) as number) > 0) c.call('INCR', released);
      c.call('ZREMRANGEBYSCORE', waiting, '-inf', now);
      const writer = c.call('PTTL', writerKey) as number;
      if (writer !== -2) return [0, writer];
      const first = c.call('ZRANGE', waiting, 0, 0, 'WITHSCORES') as string[];
      if (first[0] !== undefined) return [0, int(Math.max(0, Number(first[1]) - now))];
      c.call('ZADD', readers, now + ttl, arg(c, 0));
      if ((c.call('PTTL', readers) as number) < ttl) c.call('PEXPIRE', readers, ttl);
      return [1, c.call('INCR', fence)];
    },
  ],
  [
    'rwlock-write',
    (c) => {
      const now = nowMs(c);
      const ttl = Number(arg(c, 1));
      const { writer: writerKey, readers, waiting, fence, released } = keysOf(c);
      if ((c.call('ZREMRANGEBYSCORE', readers, '-inf', now) as number) > 0) c.call('INCR', released);
      c.call('ZREMRANGEBYSCORE', waiting, '-inf', now);
      const writer = c.call('PTTL', writerKey) as number;
      if (writer === -2 && c.call('ZCARD', readers) === 0) {
        c.call('SET', writerKey, arg(c, 0), 'PX', ttl);
        c.call('ZREM', waiting, arg(c, 0));
        const token = c.call('INCR', fence);
        c.call('PTTL', writerKey);
        return [1, token];
      }
      if (arg(c, 2) === '1') {
        c.call('ZADD', waiting, now + ttl, arg(c, 0));
        if ((c.call('PTTL', waiting) as number) < ttl) c.call('PEXPIRE', waiting, ttl);
      }
      c.call('EXISTS', released);
      if (writer !== -2) return [0, writer];
      const last = c.call('ZRANGE', readers, -1, -1, 'WITHSCORES') as string[];
      return [0, int(Math.max(0, Number(last[1]) - now))];
    },
  ],
  ['rwlock-withdraw', (c) => c.call('ZREM', key(c, 0), arg(c, 0))],
  [
    'rwlock-read-extend',
    (c) => {
      const now = nowMs(c);
      const readers = key(c, 0);
      const ttl = Number(arg(c, 1));
      const score = c.call('ZSCORE', readers, arg(c, 0)) as string | null;
      if (score === null || Number(score) <= now) {
        c.call('ZREM', readers, arg(c, 0));
        return 0;
      }
      c.call('ZADD', readers, 'XX', now + ttl, arg(c, 0));
      if ((c.call('PTTL', readers) as number) < ttl) c.call('PEXPIRE', readers, ttl);
      return 1;
    },
  ],
  [
    'rwlock-read-release',
    (c) => {
      if (c.call('ZREM', key(c, 0), arg(c, 0)) !== 1) return 0;
      c.call('INCR', key(c, 1));
      return 1;
    },
  ],
];
