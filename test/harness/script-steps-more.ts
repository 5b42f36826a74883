// More of the calls test/integration/memory-scripts.test.ts runs (script-steps.ts holds the rest
// and the helpers): elections, what the jobs features add (a fair lock kept taken after its
// release, minHold; the records of lh.idempotent) and grant notes.
import { c, MARK, type Step, s, TTL } from './script-steps.ts';

const el = ['el', 'el:fence', 'el:log', MARK];
/** An election whose waiting candidates are recorded (election-campaign.lua's KEYS[5]). */
const elc = [...el, 'el:candidates'];

export const electionSteps: Step[] = [
  // election
  s('election-campaign', el, 'c1', 'a', TTL, 1000),
  s('election-campaign', el, 'c2', 'b', TTL, 1000),
  s('inspect-election', ['el', 'el:fence'], 10),
  s('election-observe', ['el', 'el:log'], '', 100, 1000),
  s('election-proclaim', ['el', 'el:log'], 'c1', 'a2', 1000),
  s('election-proclaim', ['el', 'el:log'], 'c2', 'b2', 1000),
  s('election-extend', ['el', 'el:log'], 'c1', TTL),
  s('election-extend', ['el', 'el:log'], 'c2', TTL),
  c('HMGET', 'el', 'value', 'fence', 'logexpiry'),
  c('PTTL', 'el:log'),
  c('PTTL', 'el:fence'),
  s('election-resign', ['el', 'el:log'], 'c1', 1000),
  s('election-resign', ['el', 'el:log'], 'c1', 1000),
  s('election-campaign', el, 'c2', 'b', TTL, 1000),
  c('DEL', 'el'),
  s('election-observe', ['el', 'el:log'], '0-0', 100, 1000),
  s('election-observe', ['el', 'el:log'], '0-0', 2, 1000),
  c('PTTL', 'el:log'),
  s('election-observe', ['el', 'el:log'], '99999999999999-0', 2, 1000),
  // election candidates: recorded when they will wait, removed when elected or withdrawn (k2's
  // longer TTL keeps the members' order apart from a millisecond of rounding)
  s('election-campaign', elc, 'k0', 'z', TTL, 1000, '1'),
  s('election-campaign', elc, 'k1', 'a', TTL, 1000, '1'),
  s('election-campaign', elc, 'k2', 'b', TTL * 2, 1000, '1'),
  s('election-campaign', elc, 'k3', 'c', TTL, 1000, '0'),
  s('election-campaign', elc, 'k3', 'c', 1000, 1000, '1'),
  c('ZCARD', 'el:candidates'),
  s('inspect-election', ['el', 'el:fence', 'el:candidates'], 10),
  s('inspect-election', ['el', 'el:fence', 'el:candidates'], 1),
  s('forget-waiter', ['el:candidates'], 'k3'),
  c('ZRANGE', 'el:candidates', 0, -1),
  c('DEL', 'el'),
  s('election-campaign', elc, 'k2', 'b', TTL, 1000, '1'),
  c('ZRANGE', 'el:candidates', 0, -1),
  c('ZADD', 'el:candidates', 1, 'dead'),
  s('inspect-election', ['el', 'el:fence', 'el:candidates'], 10),
  s('election-resign', ['el', 'el:log'], 'k2', 1000),
  s('election-campaign', elc, 'k4', 'd', TTL, 1000, '1'),
  c('ZRANGE', 'el:candidates', 0, -1),
];

const holdQueue = ['fh', 'fh:queue', 'fh:deadlines'];
const idem = ['ik', 'ik:idem'];

export const jobSteps: Step[] = [
  // fair-hold: the holder's release that keeps the lock taken; the first in line gets its turn key
  c('SET', 'fh', 'h1', 'PX', TTL),
  s('fair-hold', holdQueue, 'h2', '@turn:', 3_000),
  s('fair-hold', holdQueue, 'h1', '@turn:', 3_000),
  c('PTTL', 'fh'),
  c('ZADD', 'fh:queue', 1, 'w1'),
  c('ZADD', 'fh:deadlines', 9_999_999_999_999, 'w1'),
  c('PEXPIRE', 'fh:deadlines', 60_000),
  s('fair-hold', holdQueue, 'h1', '@turn:', 2_000),
  c('GET', 'turn:w1'),
  c('PTTL', 'fh'),
  // idempotency records: nothing recorded; a run begun (another value refused); its result
  // stored; a second begin finds it; a failed run forgotten; a running one replaced on request
  s('idempotent-read', idem),
  c('SET', 'ik', 'v1', 'PX', TTL),
  s('idempotent-begin', idem, 'v2', 'fp', 60_000, '7', '0'),
  s('idempotent-begin', idem, 'v1', 'fp', 60_000, '7', '0'),
  s('idempotent-read', idem),
  s('idempotent-begin', idem, 'v1', 'fp', 60_000, '7', '0'),
  s('idempotent-end', idem, 'v2', 'done', '{"a":1}', 60_000),
  s('idempotent-end', idem, 'v1', 'done', '{"a":1}', 60_000),
  s('idempotent-read', idem),
  c('PTTL', 'ik:idem'),
  s('idempotent-begin', idem, 'v1', 'fp', 60_000, '7', '0'),
  c('DEL', 'ik:idem'),
  s('idempotent-begin', idem, 'v1', 'fp', 60_000, '8', '0'),
  s('idempotent-begin', idem, 'v1', 'fp2', 60_000, '8', '1'),
  s('idempotent-end', idem, 'v1', 'failed', '', 60_000),
  c('EXISTS', 'ik:idem'),
  s('idempotent-begin', idem, 'v1', '', 60_000, '9', '0'),
  c('DEL', 'ik'),
  s('idempotent-end', idem, 'v1', 'done', '1', 60_000),
  s('idempotent-read', idem),
];

/** Grant notes: when a holder that waited got its lease (note-granted.lua, inspect-granted.lua). */
export const noteSteps: Step[] = [
  s('note-granted', ['gn:granted'], 't1~kx0', TTL),
  s('note-granted', ['gn:granted', 'gm:granted'], 't2~kx1', TTL),
  s('note-granted', ['gn:granted'], 't1~kx0', TTL * 2),
  c('ZCARD', 'gn:granted'),
  c('ZRANGE', 'gm:granted', 0, -1),
  s('inspect-granted', ['gn:granted', 'gm:granted'], 't1', 't2', 'nobody'),
  s('inspect-granted', ['gm:granted'], 't1'),
  s('inspect-granted', ['none:granted'], 't1'),
];
