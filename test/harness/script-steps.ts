// The calls test/integration/memory-scripts.test.ts runs on a real Redis and on the memory
// backend: every script of src/scripts/ with its keys (suffixes of the run's prefix) and
// arguments, plain commands from another program in between, and inline Lua that pins Redis's
// conventions.
import { scriptSource } from '../../src/scripts/index.ts';

/**
 * A script of src/scripts (by name) or inline Lua, with KEYS as suffixes of the run's prefix, run
 * on the tracked connection; or a plain command, run on another connection (another program).
 */
export type Step = { script: string; source: string; keys: string[]; args: string[] } | { command: string[] };

export const s = (script: string, keys: string[], ...args: (string | number)[]): Step => ({
  script,
  source: scriptSource(script),
  keys,
  args: args.map(String),
});
const lua = (source: string, ...keys: string[]): Step => ({ script: 'inline', source, keys, args: [] });
export const c = (...args: (string | number)[]): Step => ({ command: args.map(String) });

export const TTL = 10_000;
/** The fence mark (one Redis: one for every name of the run, whatever their slots). */
export const MARK = 'fence-mark';
const mutex = ['m', 'm:fence', MARK];
const sem = ['sem', 'sem:fence', 'sem:released', MARK];
const rw = ['rw:writer', 'rw:readers', 'rw:waiting', 'rw:fence', 'rw:released', MARK];
const fair = (token: string) => [
  'fair',
  'fair:queue',
  'fair:deadlines',
  'fair:arrivals',
  'fair:fence',
  `turn:${token}`,
  MARK,
];
const fairOut = ['fair', 'fair:queue', 'fair:deadlines'];
/** A read-write lock with direct grants: as write takes its keys, as releases and withdraw do. */
const rwGranted = ['rg:writer', 'rg:readers', 'rg:waiting', 'rg:fence', 'rg:released', MARK, 'rg:grants'];
const rwReaders = ['rg:rqueue', 'rg:rgrants'];
const rwReader = [...rwGranted.slice(0, 6), ...rwReaders];
const rwReadOut = [
  'rg:readers',
  'rg:released',
  'rg:writer',
  'rg:waiting',
  'rg:fence',
  'rg:grants',
  ...rwReaders,
  MARK,
];
const rwWriteOut = ['rg:writer', 'rg:readers', 'rg:waiting', 'rg:fence', 'rg:grants', ...rwReaders, MARK];
const rwWithdraw = ['rg:waiting', 'rg:writer', 'rg:readers', 'rg:fence', 'rg:grants', ...rwReaders, MARK];
/** A fair lock with direct grants: as acquire takes its keys, and as release and withdraw do. */
const fairGranted = (token: string) => [...fair(token).map((k) => k.replace(/^fair/, 'fg')), 'fg:grants'];
const fairGiven = ['fg', 'fg:queue', 'fg:deadlines', 'fg:fence', 'fg:grants', MARK];
const granted = ['g', 'g:fence', MARK, 'g:waiters', 'g:grants'];
/** The same mutex as release and mutex-withdraw take its keys. */
const grantedOut = ['g', 'g:fence', 'g:waiters', 'g:grants', MARK];
/** A mutex whose waiters are recorded for inspection (acquire-recorded.lua). */
const recorded = ['mr', 'mr:fence', MARK, 'mr:recorded'];
/** A direct-grant record: channel, ttl, epoch (nobody listens on this channel, on either side). */
const record = (epoch: number) => `ch\n${TTL}\n${epoch}`;
/** A semaphore's keys with direct grants: as acquire takes them, and as release and withdraw do. */
const semGranted = ['sg', 'sg:fence', 'sg:released', MARK, 'sg:waiters', 'sg:grants'];
const semGiven = ['sg', 'sg:released', 'sg:fence', 'sg:waiters', 'sg:grants', MARK];
/** A semaphore waiter's record: channel, ttl, epoch, permits, limit (nobody listens either). */
const semRecord = (epoch: number, permits: number) => `ch\n${TTL}\n${epoch}\n${permits}\n1`;
/** A permit's expiry far ahead, in server ms. */
const FAR = 9_999_999_999_999;
const multi = ['ma', 'ma:fence', 'mb', 'mb:fence', 'mc', 'mc:fence', MARK, MARK, MARK];
/** The same names with their multiLock waiter sets (multi-acquire.lua's KEYS[3n+i]). */
const multiJoin = [...multi, 'ma:multi', 'mb:multi', 'mc:multi'];

/** Turn-key prefixes are ARGV: `@` stands for the run's prefix. */
export const steps: Step[] = [
  // mutex: acquire, busy, extend, takeover, release; the fence above a counter set ahead
  s('acquire', mutex, 'o1', TTL),
  c('PTTL', 'm:fence'),
  s('acquire', mutex, 'o2', TTL),
  s('extend', ['m'], 'o1', TTL),
  s('extend', ['m'], 'o2', TTL),
  s('force', mutex, 'o2', TTL),
  s('release', ['m'], 'o1'),
  s('release', ['m'], 'o2'),
  s('release', ['m'], 'o2'),
  // direct grants: registration, a new epoch, withdraw, a grant nobody hears (PUBLISH counts 0)
  s('acquire', granted, 'h1', TTL, record(1)),
  s('acquire', granted, 'w1', TTL, record(2)),
  s('acquire', granted, 'w1', TTL, record(3)),
  s('acquire', granted, 'w2', TTL, record(4)),
  s('inspect-mutex', ['g', 'g:fence', 'g:waiters'], 10),
  c('HGET', 'g:grants', 'w1'),
  c('ZRANGE', 'g:waiters', 0, -1),
  s('mutex-withdraw', grantedOut, 'w2'),
  s('release', grantedOut, 'h1'),
  c('EXISTS', 'g', 'g:waiters', 'g:grants'),
  s('acquire', granted, 'w3', TTL, record(5)),
  s('mutex-withdraw', grantedOut, 'w3'),
  c('EXISTS', 'g'),
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
  s('quorum-restore', mutex, 'o4', TTL, '6000000000000000'),
  s('quorum-restore', mutex, 'o5', TTL, '7000000000000000'),
  c('GET', 'm:fence'),
  s('fence-raise', mutex, 'o4', '5'),
  s('fence-raise', mutex, 'o5', '8000000000000000'),
  c('GET', 'm:fence'),
  c('PTTL', 'm:fence'),
  // a counter whose expiry time has come is re-seeded from the server's clock, with a new expiry
  c('PEXPIREAT', 'm:fence', 1),
  c('EXISTS', 'm:fence'),
  s('force', mutex, 'o6', TTL),
  c('PTTL', 'm:fence'),
  c('SET', 'm:fence', '7', 'PXAT', 1),
  c('EXISTS', 'm:fence'),
  s('inspect-mutex', mutex, 10),
  s(
    'canary',
    [
      'canary:declared',
      ...['get', 'pttl', 'exists', 'hget', 'zrange', 'xrange', 'xrevrange'].map((r) => `canary:${r}`),
    ],
    TTL,
  ),
  // multiLock: granted (one fence per name), blocked by a plain holder, the fence above a counter
  s('multi-acquire', multi, 'x1', TTL),
  s('multi-acquire', multi, 'x2', TTL),
  s('release', ['ma'], 'x1'),
  s('acquire', ['mb', 'mb:fence', MARK], 'x3', TTL),
  s('multi-acquire', multi, 'x2', TTL),
  c('EXISTS', 'ma'),
  s('release', ['mb'], 'x1'),
  s('release', ['mb'], 'x3'),
  s('release', ['mc'], 'x1'),
  c('SET', 'mc:fence', '5000000000000000'),
  s('multi-acquire', multi, 'x4', TTL),
  c('PTTL', 'mb'),
  // a mutex's waiters recorded where no grant registers them: recorded when busy (a longer TTL
  // keeps r2's lapse apart), listed, forgotten on withdraw and by a successful attempt
  s('acquire-recorded', recorded, 'r0', TTL),
  s('acquire-recorded', recorded, 'r1', TTL),
  s('acquire-recorded', recorded, 'r2', TTL * 2),
  c('ZRANGE', 'mr:recorded', 0, -1),
  s('inspect-mutex', ['mr', 'mr:fence', 'mr:waiters', 'mr:multi', 'mr:recorded'], 10),
  s('forget-waiter', ['mr:recorded'], 'r2'),
  s('release', ['mr'], 'r0'),
  s('acquire-recorded', recorded, 'r1', TTL),
  c('EXISTS', 'mr:recorded'),
  s('inspect-mutex', ['mr', 'mr:fence', 'mr:waiters', 'mr:multi', 'mr:recorded'], 10),
  // multiLock waiters: recorded on every name when they will wait (a longer TTL keeps w2's lapse
  // apart from w1's), listed by inspection, forgotten on withdraw and on success
  s('release', ['ma'], 'x4'),
  s('release', ['mb'], 'x4'),
  s('release', ['mc'], 'x4'),
  s('acquire', ['mb', 'mb:fence', MARK], 'x5', TTL),
  s('multi-acquire', multiJoin, 'w1', TTL, '1'),
  s('multi-acquire', multiJoin, 'w2', TTL * 2, '1'),
  s('multi-acquire', multi, 'w3', TTL),
  c('ZRANGE', 'mc:multi', 0, -1),
  s('inspect-mutex', ['ma', 'ma:fence', 'ma:waiters', 'ma:multi'], 10),
  s('inspect-mutex', ['mb', 'mb:fence', 'mb:waiters', 'mb:multi'], 1),
  s('forget-waiter', ['ma:multi', 'mb:multi', 'mc:multi'], 'w2'),
  c('ZRANGE', 'mb:multi', 0, -1),
  s('release', ['mb'], 'x5'),
  s('multi-acquire', multiJoin, 'w1', TTL, '1'),
  c('ZRANGE', 'ma:multi', 0, -1),
  c('EXISTS', 'mc:multi'),
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
  c('PTTL', 'sem:released'),
  c('PTTL', 'sem:fence'),
  s('inspect-semaphore', ['sem', 'sem:fence'], 10),
  c('ZADD', 'sem', 1, 'old:1'),
  s('semaphore-acquire', sem, 't3', 3, 3, TTL),
  c('GET', 'sem:released'),
  // semaphore direct grants: registration; a grant nobody hears (PUBLISH counts 0: the permit is
  // taken back and the waiter dropped); a grant found on its way; its own permits without a
  // record (busy); withdraws without and with permits
  s('semaphore-acquire', semGranted, 'sh', 1, 1, TTL, semRecord(1, 1)),
  s('semaphore-acquire', semGranted, 'sw1', 1, 1, TTL, semRecord(2, 1)),
  s('inspect-semaphore', ['sg', 'sg:fence', 'sg:waiters'], 10),
  c('HGET', 'sg:grants', 'sw1'),
  c('ZRANGE', 'sg:waiters', 0, -1),
  s('semaphore-release', semGiven, 'sh', 1),
  c('ZCARD', 'sg'),
  c('EXISTS', 'sg:waiters', 'sg:grants'),
  c('ZADD', 'sg', FAR, 'sw2:1'),
  c('HSET', 'sg:grants', 'sw2', '=9\n1'),
  s('semaphore-acquire', semGranted, 'sw2', 1, 1, TTL, semRecord(3, 1)),
  c('HGET', 'sg:grants', 'sw2'),
  s('semaphore-acquire', semGranted, 'sw2', 1, 1, TTL, semRecord(4, 1)),
  s('semaphore-acquire', semGranted, 'sw3', 1, 1, TTL, semRecord(5, 1)),
  s('semaphore-withdraw', semGiven, 'sw3', 1),
  s('semaphore-withdraw', semGiven, 'sw2', 1),
  c('ZCARD', 'sg'),
  c('EXISTS', 'sg:waiters', 'sg:grants'),
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
  s('inspect-rwlock', ['rw:writer', 'rw:readers', 'rw:waiting', 'rw:fence'], 10),
  s('rwlock-read', rw, 'r3', TTL),
  s('extend', ['rw:writer'], 'w2', TTL),
  s('release', ['rw:writer'], 'w2'),
  c('ZCARD', 'rw:waiting'),
  c('ZADD', 'rw:readers', 1, 'old'),
  s('rwlock-write', rw, 'w3', TTL, '1'),
  c('GET', 'rw:released'),
  c('PTTL', 'rw:released'),
  c('PTTL', 'rw:fence'),
  c('ZADD', 'rw:readers', 1, 'old'),
  s('rwlock-read-extend', ['rw:readers'], 'old', TTL),
  // read-write lock direct grants: writers register; the last reader out grants (PUBLISH counts
  // 0: each writer dropped in turn); a write release grants; a grant found on its way; its own
  // lease without a record; withdraw of a granted writer; writers past their deadline dropped
  s('rwlock-read', rwGranted.slice(0, 6), 'r1', TTL),
  s('rwlock-write', rwGranted, 'w1', TTL, '1', record(1)),
  s('rwlock-write', rwGranted, 'w2', TTL, '1', record(2)),
  c('HLEN', 'rg:grants'),
  c('HGET', 'rg:grants', 'w2'),
  c('PTTL', 'rg:grants'),
  s('rwlock-read-release', rwReadOut, 'r1'),
  c('EXISTS', 'rg:writer', 'rg:waiting', 'rg:grants'),
  s('rwlock-write', rwGranted, 'w3', TTL, '1', record(3)),
  s('rwlock-write', rwGranted, 'w4', TTL, '1', record(4)),
  s('rwlock-write-release', rwWriteOut, 'w3'),
  c('EXISTS', 'rg:writer', 'rg:waiting', 'rg:grants'),
  c('SET', 'rg:writer', 'w5', 'PX', TTL),
  c('HSET', 'rg:grants', 'w5', '=88\n3'),
  s('rwlock-write', rwGranted, 'w5', TTL, '1', record(5)),
  s('rwlock-write', rwGranted, 'w5', TTL, '1', record(6)),
  s('rwlock-withdraw', rwWithdraw, 'w5'),
  c('EXISTS', 'rg:writer'),
  s('rwlock-withdraw', ['rg:waiting'], 'w9'),
  c('ZADD', 'rg:waiting', 1, 'dead'),
  c('HSET', 'rg:grants', 'dead', record(7)),
  s('rwlock-write', rwGranted, 'w6', TTL, '1', record(8)),
  c('HLEN', 'rg:grants'),
  s('rwlock-write-release', rwWriteOut, 'w6'),
  s('rwlock-write-release', rwWriteOut, 'w6'),
  // read-write lock direct grants to readers: readers register behind a writer; the write
  // release grants them (PUBLISH counts 0: each taken out again); a grant found on its way; its
  // own lease without a record; a granted reader's withdraw; a writer's withdraw grants the
  // readers it kept out
  s('rwlock-write', rwGranted.slice(0, 6), 'w7', TTL, '0'),
  s('rwlock-read', rwReader, 'r5', TTL, record(9)),
  s('rwlock-read', rwReader, 'r6', TTL, record(10)),
  c('ZRANGE', 'rg:rqueue', 0, -1),
  c('HGET', 'rg:rgrants', 'r6'),
  c('PTTL', 'rg:rgrants'),
  s('rwlock-write-release', rwWriteOut, 'w7'),
  c('EXISTS', 'rg:writer', 'rg:readers', 'rg:rqueue', 'rg:rgrants'),
  c('ZADD', 'rg:readers', FAR, 'r7'),
  c('HSET', 'rg:rgrants', 'r7', '=90\n4'),
  s('rwlock-read', rwReader, 'r7', TTL, record(11)),
  s('rwlock-read', rwReader, 'r7', TTL, record(12)),
  c('HSET', 'rg:rgrants', 'r7', '=91\n5'),
  s('rwlock-read-release', rwReadOut, 'r7'),
  c('EXISTS', 'rg:readers', 'rg:rgrants'),
  s('rwlock-read', rwReader, 'r8', TTL, record(13)),
  s('rwlock-write', rwGranted, 'w8', TTL, '1', record(14)),
  s('rwlock-read', rwReader, 'r9', TTL, record(15)),
  s('inspect-rwlock', ['rg:writer', 'rg:readers', 'rg:waiting', 'rg:fence', 'rg:rqueue'], 10),
  c('ZCARD', 'rg:rqueue'),
  s('rwlock-withdraw', rwWithdraw, 'w8'),
  c('EXISTS', 'rg:waiting', 'rg:grants', 'rg:rqueue', 'rg:rgrants'),
  c('ZRANGE', 'rg:readers', 0, -1),
  s('rwlock-read-release', rwReadOut, 'r8'),
  // fair lock
  s('fair-acquire', fair('f1'), 'f1', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f2'), 'f2', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f3'), 'f3', TTL, TTL, '@turn:', '1'),
  s('fair-acquire', fair('f4'), 'f4', TTL, TTL, '@turn:', '0'),
  s('inspect-fair', ['fair', 'fair:fence', 'fair:queue', 'fair:deadlines'], 10),
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
  c('PTTL', 'fair:arrivals'),
  c('PTTL', 'fair:fence'),
  // fair lock direct grants: registration, a grant nobody hears (PUBLISH counts 0: the head keeps
  // its place and gets its turn key), a grant found on its way, its own lock without a record,
  // withdraw of a granted waiter (handed on), withdraw of the head while free
  s('fair-acquire', fairGranted('g1'), 'g1', TTL, TTL, '@turn:', '1', record(1)),
  s('fair-acquire', fairGranted('g2'), 'g2', TTL, TTL, '@turn:', '1', record(2)),
  s('fair-acquire', fairGranted('g3'), 'g3', TTL, TTL, '@turn:', '1', record(3)),
  c('HLEN', 'fg:grants'),
  c('HGET', 'fg:grants', 'g3'),
  c('PTTL', 'fg:grants'),
  s('fair-release', fairGiven, 'g1', '@turn:'),
  c('GET', 'turn:g2'),
  c('HMGET', 'fg:grants', 'g1', 'g2', 'g3'),
  c('SET', 'fg', 'g2', 'PX', TTL),
  c('HSET', 'fg:grants', 'g2', '=77\n2'),
  s('fair-acquire', fairGranted('g2'), 'g2', TTL, TTL, '@turn:', '1', record(4)),
  s('fair-acquire', fairGranted('g2'), 'g2', TTL, TTL, '@turn:', '1', record(5)),
  c('ZRANGE', 'fg:queue', 0, -1),
  s('fair-withdraw', [...fairGiven.slice(0, 3), 'turn:g2', 'fg:fence', 'fg:grants', MARK], 'g2', '@turn:'),
  c('EXISTS', 'fg'),
  c('GET', 'turn:g3'),
  s('fair-withdraw', [...fairGiven.slice(0, 3), 'turn:g3', 'fg:fence', 'fg:grants', MARK], 'g3', '@turn:'),
  c('EXISTS', 'fg:queue', 'fg:grants'),
  c('ZADD', 'fg:queue', 1, 'dead'),
  c('ZADD', 'fg:deadlines', 1, 'dead'),
  c('HSET', 'fg:grants', 'dead', record(6)),
  s('fair-acquire', fairGranted('g4'), 'g4', TTL, TTL, '@turn:', '1', record(7)),
  c('HLEN', 'fg:grants'),
  // quorum fencing
  s('fence-raise', ['q', 'q:fence', MARK], 'o', '42'),
  c('SET', 'q', 'o'),
  s('fence-raise', ['q', 'q:fence', MARK], 'o', '7'),
  c('GET', 'q:fence'),
  c('PTTL', 'q:fence'),
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
