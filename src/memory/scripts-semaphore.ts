// JS twins of src/scripts/semaphore-*.lua, line for line: the same commands in the same order,
// so that tracking is armed and cleared as on Redis.
import { arg, int, key, type MemoryScript, nowMs } from './script-call.ts';

export const semaphoreScripts: [string, MemoryScript][] = [
  [
    'semaphore-acquire',
    (c) => {
      const now = nowMs(c);
      const [set, fence, released] = [key(c, 0), key(c, 1), key(c, 2)];
      const token = arg(c, 0);
      const [n, limit, ttl] = [Number(arg(c, 1)), Number(arg(c, 2)), Number(arg(c, 3))];
      if ((c.call('ZREMRANGEBYSCORE', set, '-inf', now) as number) > 0) c.call('INCR', released);
      const used = c.call('ZCARD', set) as number;
      if (used + n <= limit) {
        for (let i = 1; i <= n; i++) c.call('ZADD', set, now + ttl, `${token}:${i}`);
        if ((c.call('PTTL', set) as number) < ttl) c.call('PEXPIRE', set, ttl);
        return [1, c.call('INCR', fence)];
      }
      const need = used + n - limit;
      const at = c.call('ZRANGE', set, need - 1, need - 1, 'WITHSCORES') as string[];
      c.call('EXISTS', released);
      return [0, int(Math.max(0, Number(at[1]) - now))];
    },
  ],
  [
    'semaphore-count',
    (c) => {
      const now = nowMs(c);
      return c.call('ZCOUNT', key(c, 0), `(${now}`, '+inf');
    },
  ],
  [
    'semaphore-extend',
    (c) => {
      const now = nowMs(c);
      const set = key(c, 0);
      const token = arg(c, 0);
      const [n, ttl] = [Number(arg(c, 1)), Number(arg(c, 2))];
      for (let i = 1; i <= n; i++) {
        const score = c.call('ZSCORE', set, `${token}:${i}`) as string | null;
        if (score === null || Number(score) <= now) {
          for (let j = 1; j <= n; j++) c.call('ZREM', set, `${token}:${j}`);
          return 0;
        }
      }
      for (let i = 1; i <= n; i++) c.call('ZADD', set, 'XX', now + ttl, `${token}:${i}`);
      if ((c.call('PTTL', set) as number) < ttl) c.call('PEXPIRE', set, ttl);
      return 1;
    },
  ],
  [
    'semaphore-release',
    (c) => {
      const [set, released] = [key(c, 0), key(c, 1)];
      const n = Number(arg(c, 1));
      let removed = 0;
      for (let i = 1; i <= n; i++) removed += c.call('ZREM', set, `${arg(c, 0)}:${i}`) as number;
      if (removed > 0) c.call('INCR', released);
      return removed === n ? 1 : 0;
    },
  ],
];
