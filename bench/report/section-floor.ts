// Section 7 of docs/benchmarks.md: what the server and the client libraries manage at best, so
// that every figure above reads as a ratio to the physical limit.
import type { Results } from '../results.ts';
import { fmtMs, fmtNum, table } from './format.ts';

/** 7. The floor: PING, a bare-socket handoff, client EVALSHA and redis-benchmark. */
export function floorSection(results: Results): string[] {
  const f = results.scenarios.floor;
  if (f === undefined) return [];
  return [
    '## 7. The floor',
    '',
    'What the server and the client libraries manage at best on the same kind of server, to read every ' +
      'result above as a ratio to the physical limit. A handoff cannot beat one invalidation push plus ' +
      'one round trip; an uncontended acquire + release costs two round trips.',
    '',
    table(
      ['measure', 'p50', 'p99'],
      [
        ['PING round trip, bare socket', `${fmtMs(f.ping.raw.p50)} ms`, `${fmtMs(f.ping.raw.p99)} ms`],
        ['PING round trip, ioredis', `${fmtMs(f.ping.ioredis.p50)} ms`, `${fmtMs(f.ping.ioredis.p99)} ms`],
        [
          'PING round trip, node-redis',
          `${fmtMs(f.ping.nodeRedis.p50)} ms`,
          `${fmtMs(f.ping.nodeRedis.p99)} ms`,
        ],
        [
          'handoff, bare sockets in one process: DEL sent → invalidation push → SET NX answered',
          `${fmtMs(f.bareHandoff?.p50)} ms`,
          `${fmtMs(f.bareHandoff?.p99)} ms`,
        ],
      ],
    ),
    '',
    table(
      ['client EVALSHA of a lock-shaped script', 'calls/s'],
      [
        [`ioredis, ${f.evalsha.inFlight} in flight`, fmtNum(f.evalsha.ioredis)],
        [`node-redis, ${f.evalsha.inFlight} in flight`, fmtNum(f.evalsha.nodeRedis)],
      ],
    ),
    '',
    table(
      ['redis-benchmark (50 clients)', 'test', 'requests/s', 'p50', 'p99'],
      f.redisBenchmark.map((r) => [
        `\`${r.command}\``,
        r.test,
        fmtNum(r.rps),
        `${fmtMs(r.p50)} ms`,
        `${fmtMs(r.p99)} ms`,
      ]),
      ['l', 'l', 'r', 'r', 'r'],
    ),
    '',
    `The lock-shaped script: \`${f.script}\`.`,
    '',
  ];
}
