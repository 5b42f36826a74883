// Sections 1 and 2 of docs/benchmarks.md: how fast a lock is taken when nobody else wants it,
// and how fast it passes from one process to another.
import type { Results } from '../results.ts';
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

/** 2. Handoff between processes, next to the cross-process floor when it was measured. */
export function handoffSection(results: Results, charts: Chart[]): string[] {
  const h = results.scenarios.handoff;
  if (h === undefined) return [];
  const name = contenderName(results);
  return [
    '## 2. Handoff between processes',
    '',
    `${h.settings['workers']} worker processes contend for one name. Each holds the lock ${h.settings['hold']} ms, ` +
      'releases it, then steps aside until another worker has acquired it, so at every release the others ' +
      'are already waiting. The gap runs from the moment the holder calls release to the moment another ' +
      'process’s acquire resolves; handoffs/s counts acquisitions by a process other than the last holder. ' +
      '`overlaps` counts acquisitions reported while another process still held the lock (should be 0).',
    '',
    `Settings: ${settingsLine(h.settings)}. Worker clock offsets from the parent: ` +
      `${h.clockOffsets.map((o) => `${fmtNum(o.offset * 1000, 0)} ± ${fmtNum(o.error * 1000, 0)} µs`).join(', ')}.`,
    '',
    table(
      ['contender', 'gap p50', 'gap p99', 'handoffs/s', 'handoffs measured', 'overlaps'],
      Object.entries(h.contenders).map(([id, r]) => [
        name(id),
        `${fmtMs(r.gap.p50)} ms`,
        `${fmtMs(r.gap.p99)} ms`,
        fmtNum(r.handoffsPerSecond),
        fmtNum(r.gap.n, 0),
        fmtNum(r.overlaps, 0),
      ]),
    ),
    ...(h.floor === undefined
      ? []
      : [
          '',
          `The cross-process floor, in the same worker processes, the same loop and the same rounds: ` +
            'leasehold’s own acquire.lua and release.lua over bare RESP3 sockets with CLIENT TRACKING ON, ' +
            'no client library and no lock library, every waiting process retrying on every push ' +
            `(bench/contenders/floor.ts): gap p50 ${fmtMs(h.floor.gap.p50)} ms, p99 ${fmtMs(h.floor.gap.p99)} ms, ` +
            `${fmtNum(h.floor.handoffsPerSecond)} handoffs/s over ${fmtNum(h.floor.gap.n, 0)} handoffs, ` +
            `${fmtNum(h.floor.overlaps, 0)} overlaps. What a lock that wakes every waiting process pays here ` +
            'before any client library: the in-process floor of section 7 has no second process to wake.',
        ]),
    chartLink(charts, 'handoff.svg'),
  ];
}
