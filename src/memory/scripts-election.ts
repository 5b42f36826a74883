// JS twins of src/scripts/election-*.lua, line for line: the same commands in the same order,
// so that tracking is armed and cleared as on Redis.
import { arg, key, type MemoryScript, type MemoryScriptCall } from './script-call.ts';

type Entry = [id: string, fields: string[]];

/** Logs the end of a term that ended without resigning (expired, deleted), unless logged already. */
function logVacancy(c: MemoryScriptCall, log: string, length: string): void {
  const last = (c.call('XREVRANGE', log, '+', '-', 'COUNT', 1) as Entry[])[0];
  if (last !== undefined && last[1][1] !== 'vacant') {
    c.call('XADD', log, 'MAXLEN', '~', length, '*', 'type', 'vacant', 'fence', last[1][3] ?? '', 'value', '');
  }
}

export const electionScripts: [string, MemoryScript][] = [
  [
    'election-campaign',
    (c) => {
      const [leader, fenceKey, log] = [key(c, 0), key(c, 1), key(c, 2)];
      const [token, value, ttl, length] = [arg(c, 0), arg(c, 1), arg(c, 2), arg(c, 3)];
      if (c.call('EXISTS', leader) === 1) return [0, c.call('PTTL', leader)];
      logVacancy(c, log, length);
      const fence = c.call('INCR', fenceKey) as number;
      c.call('HSET', leader, 'token', token, 'value', value, 'fence', fence);
      c.call('PEXPIRE', leader, ttl);
      c.call('XADD', log, 'MAXLEN', '~', length, '*', 'type', 'elected', 'fence', fence, 'value', value);
      c.call('EXISTS', leader);
      return [1, fence];
    },
  ],
  [
    'election-extend',
    (c) => {
      if (c.call('HGET', key(c, 0), 'token') !== arg(c, 0)) return 0;
      c.call('PEXPIRE', key(c, 0), arg(c, 1));
      c.call('EXISTS', key(c, 0));
      return 1;
    },
  ],
  [
    'election-observe',
    (c) => {
      const [leader, log] = [key(c, 0), key(c, 1)];
      const [after, count, length] = [arg(c, 0), arg(c, 1), arg(c, 2)];
      if (c.call('EXISTS', leader) === 0) logVacancy(c, log, length);
      const entries =
        after === ''
          ? c.call('XREVRANGE', log, '+', '-', 'COUNT', 1)
          : c.call('XRANGE', log, `(${after}`, '+', 'COUNT', count);
      return [entries, c.call('PTTL', leader)];
    },
  ],
  [
    'election-proclaim',
    (c) => {
      const [leader, log] = [key(c, 0), key(c, 1)];
      if (c.call('HGET', leader, 'token') !== arg(c, 0)) return 0;
      c.call('HSET', leader, 'value', arg(c, 1));
      const fence = c.call('HGET', leader, 'fence') as string;
      c.call(
        'XADD',
        log,
        'MAXLEN',
        '~',
        arg(c, 2),
        '*',
        'type',
        'proclaimed',
        'fence',
        fence,
        'value',
        arg(c, 1),
      );
      return 1;
    },
  ],
  [
    'election-resign',
    (c) => {
      const [leader, log] = [key(c, 0), key(c, 1)];
      if (c.call('HGET', leader, 'token') !== arg(c, 0)) return 0;
      const fence = c.call('HGET', leader, 'fence') as string;
      c.call('DEL', leader);
      c.call('XADD', log, 'MAXLEN', '~', arg(c, 1), '*', 'type', 'vacant', 'fence', fence, 'value', '');
      return 1;
    },
  ],
];
