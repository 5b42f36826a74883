// JS twins of src/scripts/fair-*.lua, line for line: the same commands in the same order,
// so that tracking is armed and cleared as on Redis. The holder's extend is the mutex's script.
import { arg, first, int, key, type MemoryScript, nowMs } from './script-call.ts';

/** Lua's `tonumber(nil) - now`: a script error, as on Redis. */
function score(reply: unknown): number {
  if (reply === null) throw new Error('ERR user_script: attempt to perform arithmetic on a nil value');
  return Number(reply);
}

export const fairScripts: [string, MemoryScript][] = [
  [
    'fair-acquire',
    (c) => {
      const now = nowMs(c);
      const [lock, queue, deadlines, arrivals, fence, turn] = [
        key(c, 0),
        key(c, 1),
        key(c, 2),
        key(c, 3),
        key(c, 4),
        key(c, 5),
      ];
      const token = arg(c, 0);
      const [ttl, wttl] = [Number(arg(c, 1)), Number(arg(c, 2))];
      const before = first(c.call('ZRANGE', queue, 0, 0));
      for (const dead of c.call('ZRANGEBYSCORE', deadlines, '-inf', now) as string[]) {
        c.call('ZREM', queue, dead);
        c.call('ZREM', deadlines, dead);
      }
      const queued = c.call('ZSCORE', queue, token) !== null;
      let head = first(c.call('ZRANGE', queue, 0, 0));
      const free = c.call('EXISTS', lock) === 0;
      if (free && (head === token || (head === undefined && !queued))) {
        c.call('SET', lock, token, 'PX', ttl);
        c.call('ZREM', queue, token);
        c.call('ZREM', deadlines, token);
        c.call('DEL', turn);
        const fencingToken = c.call('INCR', fence);
        c.call('PTTL', lock);
        return [1, fencingToken];
      }
      if (queued || arg(c, 4) === '1') {
        if (!queued) {
          c.call('ZADD', queue, c.call('INCR', arrivals) as number, token);
          head = first(c.call('ZRANGE', queue, 0, 0));
        }
        c.call('ZADD', deadlines, now + wttl, token);
        // The queue outlives its last waiter only briefly; never shorten another waiter's horizon.
        for (const k of [queue, deadlines]) {
          if ((c.call('PTTL', k) as number) < wttl * 2) c.call('PEXPIRE', k, wttl * 2);
        }
      }
      // Dropping a dead head made someone else first in line while the lock is free: wake only them.
      if (free && head !== undefined && head !== before && head !== token) {
        c.call('SET', arg(c, 3) + head, '1', 'PX', wttl);
      }
      c.call('GET', turn);
      if (head === token) return [0, c.call('PTTL', lock)];
      if (head === undefined) return [0, -1];
      return [0, int(Math.max(0, score(c.call('ZSCORE', deadlines, head)) - now))];
    },
  ],
  [
    'fair-release',
    (c) => {
      const [lock, queue, deadlines] = [key(c, 0), key(c, 1), key(c, 2)];
      if (c.call('GET', lock) !== arg(c, 0)) return [0, ''];
      c.call('DEL', lock);
      const now = nowMs(c);
      for (const dead of c.call('ZRANGEBYSCORE', deadlines, '-inf', now) as string[]) {
        c.call('ZREM', queue, dead);
        c.call('ZREM', deadlines, dead);
      }
      const head = first(c.call('ZRANGE', queue, 0, 0));
      if (head === undefined) return [1, ''];
      c.call('SET', arg(c, 1) + head, '1', 'PX', Math.max(1000, c.call('PTTL', deadlines) as number));
      return [1, head];
    },
  ],
  [
    'fair-withdraw',
    (c) => {
      const [lock, queue, deadlines, turn] = [key(c, 0), key(c, 1), key(c, 2), key(c, 3)];
      const token = arg(c, 0);
      const head = first(c.call('ZRANGE', queue, 0, 0));
      c.call('ZREM', queue, token);
      c.call('ZREM', deadlines, token);
      c.call('DEL', turn);
      if (head !== token || c.call('EXISTS', lock) === 1) return '';
      const next = first(c.call('ZRANGE', queue, 0, 0));
      if (next === undefined) return '';
      c.call('SET', arg(c, 1) + next, '1', 'PX', 60000);
      return next;
    },
  ],
];
