// Sections 1 and 2 of docs/benchmarks.md: how fast a lock is taken when nobody else wants it,
// and how fast it passes from one process to another.
import type { Results } from '../results.ts';
import type { HandoffResult, HandoffSummary } from '../scenarios/handoff.ts';
import type { Chart } from './charts.ts';
import { fmtMs, fmtNum, table } from './format.ts';
import { chartLink, contenderName, settingsLine } from './section.ts';

/** 1. Uncontended acquire + release. */
export function uncontendedSection(results: Results, charts: Chart[]): string[] {
  const u = results.scenarios.uncontended;
  if (u === undefined) return [];
  const name = contenderName(results);
  return [
    '## 1. Uncontended acquire + release',
    '',
    'One client per contender acquires and releases a free lock: one pair at a time on one name, then ' +
      `${u.settings['inFlight']} pairs in flight on distinct names over one connection. Latency is one ` +
      'acquire plus its release.',
    '',
    `Settings: ${settingsLine(u.settings)}.`,
    '',
    table(
      [
        'contender',
        '1 in flight p50',
        'p99',
        'pairs/s',
        `${u.settings['inFlight']} in flight p50`,
        'p99',
        'pairs/s',
      ],
      Object.entries(u.contenders).map(([id, r]) => [
        name(id),
        `${fmtMs(r.sequential.p50)} ms`,
        `${fmtMs(r.sequential.p99)} ms`,
        fmtNum(r.sequential.opsPerSecond),
        `${fmtMs(r.parallel.p50)} ms`,
        `${fmtMs(r.parallel.p99)} ms`,
        fmtNum(r.parallel.opsPerSecond),
      ]),
    ),
    chartLink(charts, 'uncontended.svg'),
  ];
}

/** 2. Handoff between processes, next to the floors when they were measured. */
export function handoffSection(results: Results, charts: Chart[]): string[] {
  const h = results.scenarios.handoff;
  if (h === undefined) return [];
  return [
    ...turnsSection(results, h, '## 2. Handoff between processes', `${h.settings['hold']} ms`),
    chartLink(charts, 'handoff.svg'),
  ];
}

/** 2b. The idle-waiter pattern: the same loop with long holds, waiters and Redis asleep. */
export function idleHandoffSection(results: Results): string[] {
  const h = results.scenarios.idleHandoff;
  if (h === undefined) return [];
  return [
    ...turnsSection(
      results,
      h,
      '## 2b. Handoff to idle waiters',
      `${h.settings['hold']}-${h.settings['holdMax']} ms (drawn at random)`,
    ),
    '',
    'With holds this long every waiter, and Redis itself, has gone to sleep by the time of the release: ' +
      'the gap includes waking them, which a peer that polls every millisecond never lets happen (it pays ' +
      'in commands instead: the Redis commands/s and CPU columns, counted over each round). ' +
      'leasehold’s `lowLatency` rows are its opt-in warm waiter (docs/low-latency.md): a PING every 2 ms ' +
      'while a wait is younger than 1 s. The peers’ `poll` rows are their tuned set-up at longer poll ' +
      'intervals, for the chart below.',
    '',
    '![latency against load](benchmarks/idle-tradeoff.svg)',
  ];
}

function turnsSection(results: Results, h: HandoffResult, title: string, hold: string): string[] {
  const name = contenderName(results);
  const floorLine = (label: string, f: HandoffSummary, what: string) =>
    `- ${label}: gap p50 ${fmtMs(f.gap.p50)} ms, p99 ${fmtMs(f.gap.p99)} ms, ` +
    `${fmtNum(f.handoffsPerSecond)} handoffs/s over ${fmtNum(f.gap.n, 0)} handoffs, ` +
    `${fmtNum(f.overlaps, 0)} overlaps. ${what}`;
  const floors = [
    ...(h.grantFloor === undefined
      ? []
      : [
          floorLine(
            '**Direct-grant floor** (bench/stages/bare-grant.ts)',
            h.grantFloor,
            'The release script hands the lock to the first registered waiter and PUBLISHes the grant on ' +
              'that waiter’s own channel; the waiter holds the lock when the message arrives: one trip to ' +
              'Redis and one back, one process woken, no client library.',
          ),
        ]),
    ...(h.floor === undefined
      ? []
      : [
          floorLine(
            '**Wake-all floor** (bench/contenders/floor.ts; called the cross-process floor before issue 27)',
            h.floor,
            'leasehold’s own acquire.lua and release.lua over bare RESP3 sockets with CLIENT TRACKING ON, ' +
              'every waiting process retrying on every push: what a lock that wakes every waiting process ' +
              'and lets them race pays here (a push, then a round trip), before any client library.',
          ),
        ]),
  ];
  return [
    title,
    '',
    `${h.settings['workers']} worker processes contend for one name. Each holds the lock ${hold}, ` +
      'releases it, then steps aside until another worker has acquired it, so at every release the others ' +
      'are already waiting. The gap runs from the moment the holder calls release to the moment another ' +
      'process’s acquire resolves; handoffs/s counts acquisitions by a process other than the last holder. ' +
      '`overlaps` counts acquisitions reported while another process still held the lock (should be 0).',
    '',
    `Settings: ${settingsLine(h.settings)}. Worker clock offsets from the parent: ` +
      `${h.clockOffsets.map((o) => `${fmtNum(o.offset * 1000, 0)} ± ${fmtNum(o.error * 1000, 0)} µs`).join(', ')}.`,
    '',
    table(
      [
        'contender',
        'gap p50',
        'gap p99',
        'handoffs/s',
        'handoffs measured',
        'overlaps',
        'Redis commands/s',
        'Redis CPU ms/s',
      ],
      Object.entries(h.contenders).map(([id, r]) => [
        name(id),
        `${fmtMs(r.gap.p50)} ms`,
        `${fmtMs(r.gap.p99)} ms`,
        fmtNum(r.handoffsPerSecond),
        fmtNum(r.gap.n, 0),
        fmtNum(r.overlaps, 0),
        r.commandsPerSecond === undefined ? '–' : fmtNum(r.commandsPerSecond, 0),
        r.redisCpuPerSecond === undefined ? '–' : fmtNum(r.redisCpuPerSecond, 0),
      ]),
    ),
    ...(floors.length === 0
      ? []
      : ['', 'Floors, in the same worker processes, the same loop and the same rounds:', '', ...floors]),
  ];
}
