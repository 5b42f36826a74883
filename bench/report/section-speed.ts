// Sections 1, 2 and 2b of docs/benchmarks.md: how fast a lock is taken when nobody else wants it,
// and how fast it passes from one process to another. The method is written by hand below them.
import type { Summary } from '../lib/stats.ts';
import type { Results } from '../results.ts';
import type { HandoffResult } from '../scenarios/handoff.ts';
import { GRANT_STAGES } from '../scenarios/stages.ts';
import type { UncontendedResult } from '../scenarios/uncontended.ts';
import { fmtMs, fmtNum, table } from './format.ts';
import { type Chart, chartLink, contenderName, heading } from './section.ts';

const cpu = (us: number | undefined) => (us === undefined ? '–' : `${fmtNum(us, 0)} µs`);

/** 1. Uncontended acquire + release. */
export function uncontendedSection(results: Results, charts: Chart[]): string[] {
  const u = results.scenarios.uncontended;
  if (u === undefined) return [];
  const name = contenderName(results);
  const many = u.settings['inFlight'];
  const row = (label: string, r: UncontendedResult['contenders'][string]) => [
    label,
    ...[r.sequential, r.parallel].flatMap((x) => [
      `${fmtMs(x.p50)} ms`,
      `${fmtMs(x.p99)} ms`,
      fmtNum(x.opsPerSecond),
      cpu(x.cpuPerPair),
    ]),
    r.parallel.serverCpuPerPair === undefined ? '–' : `${fmtNum(r.parallel.serverCpuPerPair, 1)} µs`,
  ];
  const floors = Object.entries(u.floors ?? {}).map(([driver, r]) =>
    row(`*floor: leasehold's scripts on bare ${driver}* (bench/contenders/script-floor.ts)`, r),
  );
  return [
    ...heading('## 1. Uncontended acquire + release', u.settings),
    table(
      `contender | 1 in flight p50 | p99 | pairs/s | CPU / pair | ${many} in flight p50 | p99 | pairs/s | CPU / pair | Redis CPU / pair`,
      [...Object.entries(u.contenders).map(([id, r]) => row(name(id), r)), ...floors],
    ),
    ...(floors.length === 0
      ? []
      : [
          '',
          "The floors send leasehold's two scripts through the same client library and nothing else (no wait queue, lease, renewal or loss detection): what a leasehold pair costs above its floor is leasehold's own JavaScript.",
        ]),
    chartLink(charts, 'uncontended.svg'),
  ];
}

/** 2. Handoff between processes, 1 ms holds. */
export const handoffSection = turns('handoff', '## 2. Handoff between processes', 'handoff.svg');
/** 2b. The idle-waiter pattern: the same loop with long holds, waiters and Redis asleep. */
export const idleHandoffSection = turns('idleHandoff', '## 2b. Handoff to idle waiters', 'idle-tradeoff.svg');

/** A handoff section: the turns (the floor's last), the chart, the stages when they were recorded. */
function turns(scenario: 'handoff' | 'idleHandoff', title: string, chart: string) {
  return (results: Results, charts: Chart[]): string[] => {
    const h = results.scenarios[scenario];
    if (h === undefined) return [];
    const name = contenderName(results);
    const offsets = h.clockOffsets.map(
      (o) => `${fmtNum(o.offset * 1000, 0)} ± ${fmtNum(o.error * 1000, 0)} µs`,
    );
    const row = (label: string, r: HandoffResult['contenders'][string]) => [
      label,
      ...[r.gap.p50, r.gap.p99].map((x) => `${fmtMs(x)} ms`),
      fmtNum(r.handoffsPerSecond),
      ...[r.gap.n, r.overlaps, r.commandsPerSecond, r.redisCpuPerSecond].map((x) => fmtNum(x, 0)),
    ];
    const floor = h.grantFloor && row('*direct-grant floor* (bench/contenders/floor.ts)', h.grantFloor);
    return [
      ...heading(title, h.settings, ` Worker clock offsets from the parent: ${offsets.join(', ')}.`),
      table(
        'contender | gap p50 | gap p99 | handoffs/s | handoffs measured | overlaps | Redis commands/s | Redis CPU ms/s',
        [...Object.entries(h.contenders).map(([id, r]) => row(name(id), r)), ...(floor ? [floor] : [])],
      ),
      chartLink(charts, chart),
      ...stagesTable(results, h),
    ];
  };
}

/** Where the gap of a handoff by grant goes, when the run recorded stages (--stages). */
function stagesTable(results: Results, h: HandoffResult): string[] {
  const cols = Object.entries(h.stages ?? {}).filter(([, s]) => s.grant.n > 0);
  if (cols.length === 0) return [];
  const name = contenderName(results);
  const cell = (x: Summary | undefined) => (x === undefined ? '–' : `${fmtMs(x.p50)} / ${fmtMs(x.mean)}`);
  return [
    '',
    'Where the gap of a handoff by direct grant goes (`--stages`), p50 / mean, ms:',
    '',
    table(
      ['stage', ...cols.map(([id, s]) => `${name(id)} (${s.grant.n} of ${s.handoffs} handoffs)`)],
      [
        ['gap', ...cols.map(([, s]) => cell(s.grant.gap))],
        ...Object.entries(GRANT_STAGES).map(([stage, text]) => [
          text,
          ...cols.map(([, s]) => cell(s.grant.stages[stage as keyof typeof GRANT_STAGES])),
        ]),
      ],
    ),
  ];
}
