// Sections 3 and 4 of docs/benchmarks.md: how soon a holder hears that it lost its lock, and how
// long a waiter waits after its holder died. The method is written by hand below them.
import type { Results } from '../results.ts';
import { fmtMs, fmtNum, table } from './format.ts';
import { lossCell } from './headline.ts';
import { type Chart, chartLink, contenderName, heading } from './section.ts';

const concurrently = ' Quick run: the contenders of a round ran at the same time.';

/** 3. Loss detection, after a DEL and after a takeover. */
export function lossSection(results: Results, charts: Chart[]): string[] {
  const l = results.scenarios.loss;
  if (l === undefined) return [];
  const name = contenderName(results);
  const cap = l.settings['cap'] ?? 0;
  return [
    ...heading('## 3. Loss detection', l.settings, l.concurrent ? concurrently : ''),
    table(
      'contender | after DEL p50 | p99 | after takeover p50 | p99 | samples',
      Object.entries(l.contenders).map(([id, r]) => [
        name(id),
        lossCell(r.del, cap, 'p50'),
        lossCell(r.del, cap),
        lossCell(r.takeover, cap, 'p50'),
        lossCell(r.takeover, cap),
        `${r.del.n + r.del.never} + ${r.takeover.n + r.takeover.never}`,
      ]),
    ),
    chartLink(charts, 'loss.svg'),
  ];
}

/** 4b. How long an election is without a leader after its leader's process died, by TTL. */
export function failoverSection(results: Results): string[] {
  const f = results.scenarios.failover;
  if (f === undefined) return [];
  return [
    '## 4b. Election failover (leasehold)',
    '',
    'Two processes run `election.lead`; the leader is SIGKILLed at a random moment of its term; the time until the other leads (docs/election.md).',
    '',
    table(
      "ttl | new leader p50 | max | beyond the dead term's expiry p50 | max | 1 s ticks missed p50 | max | samples",
      Object.entries(f.ttls).map(([ttl, r]) => [
        `${fmtNum(Number(ttl), 0)} ms`,
        ...[r.newLeader.p50, r.newLeader.max, r.beyondTtl.p50, r.beyondTtl.max].map((x) => `${fmtMs(x)} ms`),
        ...[r.ticksMissed.p50, r.ticksMissed.max, r.newLeader.n].map((x) => fmtNum(x, 0)),
      ]),
    ),
  ];
}

/** 4. Crash recovery: what a SIGKILLed holder costs beyond its TTL. */
export function crashSection(results: Results, charts: Chart[]): string[] {
  const c = results.scenarios.crash;
  if (c === undefined) return [];
  const name = contenderName(results);
  return [
    ...heading('## 4. Crash recovery', c.settings, c.concurrent ? concurrently : ''),
    table(
      'contender | beyond TTL p50 | p99 | max | TTL left at kill p50 | samples | early',
      Object.entries(c.contenders).map(([id, r]) => [
        name(id),
        ...[r.excess.p50, r.excess.p99, r.excess.max, r.remaining.p50].map((x) => `${fmtMs(x)} ms`),
        fmtNum(r.excess.n, 0),
        fmtNum(r.early, 0),
      ]),
    ),
    chartLink(charts, 'crash.svg'),
  ];
}
