// Sections 5 and 6 of docs/benchmarks.md: what waiting and holding cost Redis and the process,
// for a few waiters, and how that grows with leases and waiters (issue 15).
import { median } from '../lib/stats.ts';
import type { Results } from '../results.ts';
import type { HeldCell, HeldOutcome } from '../scenarios/scale-held.ts';
import type { WaitersCell } from '../scenarios/scale-waiters.ts';
import { fmtBytes, fmtMs, fmtNum, table } from './format.ts';
import { type Chart, chartLink, contenderName, heading, settingsLine } from './section.ts';

/** 5. Idle load: Redis and CPU while callers wait on a held lock. */
export function idleSection(results: Results, charts: Chart[]): string[] {
  const i = results.scenarios.idle;
  if (i === undefined) return [];
  const name = contenderName(results);
  return [
    ...heading('## 5. Idle load', i.settings),
    table(
      'contender | Redis commands/s | script calls/s | socket reads/s | Redis CPU | waiting process CPU',
      Object.entries(i.contenders).map(([id, r]) => [
        name(id),
        fmtNum(r.commandsPerSecond),
        fmtNum(median(r.rounds.map((x) => x.scriptsPerSecond))),
        fmtNum(r.readsPerSecond),
        `${fmtNum(r.redisCpuPercent, 1)} %`,
        `${fmtNum(r.waiterCpuPercent, 1)} %`,
      ]),
    ),
    chartLink(charts, 'idle.svg'),
  ];
}

/** Most leases lost while held: the window's extension figures describe a failure, not a cycle. */
export const renewalFailed = (c: HeldCell) => c.lost * 2 >= c.leases;

/** Heap per lease at rest (the smallest of the samples) and, when larger, the largest. */
function heap(c: HeldCell): string {
  const [low, high] = [fmtBytes(c.heapPerLease), fmtBytes(c.heapPerLeaseMax)];
  return high === low ? low : `${low.replace(' KiB', '')}-${high}`;
}

function heldRow(name: string, c: HeldOutcome): string[] {
  if ('skipped' in c) return [name, fmtNum(c.leases, 0), c.skipped, '', '', '', '', '', ''];
  const taking = `${fmtNum(c.acquireMs / 1000, 2)} s${c.lost > 0 ? `, ${fmtNum(c.lost, 0)} lost` : ''}`;
  const common = [name, fmtNum(c.leases, 0), heap(c), fmtBytes(c.redisMemoryPerLease)];
  if (renewalFailed(c))
    return [...common, `renewal did not keep up: ${fmtNum(c.lost, 0)} lost`, '–', '–', '–', taking];
  return [
    ...common,
    `${fmtNum(c.cycleMs, 0)} ms`,
    `${fmtMs(c.perCycle.redisCpuMs)} / ${fmtMs(c.perCycle.clientCpuMs)} ms`,
    `${c.redisUsecPerExtension.toFixed(2)} / ${c.clientUsecPerExtension.toFixed(2)} µs`,
    fmtNum(c.perCycle.reads),
    taking,
  ];
}

/** 6. Scale: held leases, waiters on one name, waiters on distinct names. */
export function scaleSection(results: Results, charts: Chart[]): string[] {
  const sc = results.scenarios.scale;
  if (sc === undefined) return [];
  const name = contenderName(results);
  const { held, waiters: w } = sc.settings;
  const ids = [...new Set(sc.waiters.map((c) => c.contender))];
  const grid = [...new Map(sc.waiters.map((c) => [`${c.waiters}/${c.processes}`, c])).values()];
  // One row per cell, one column per contender: the curves read down a column.
  const pivot = (f: (c: WaitersCell) => string) =>
    table(
      ['waiters', 'processes', ...ids.map(name)],
      grid.map((g) => [
        fmtNum(g.waiters, 0),
        String(g.processes),
        ...ids.map((id) => {
          const c = sc.waiters.find(
            (x) => x.contender === id && x.waiters === g.waiters && x.processes === g.processes,
          );
          return c === undefined ? 'not run' : f(c);
        }),
      ]),
    );
  return [
    '## 6. Scale',
    '',
    `On ${sc.redisVersion}. **Held leases**, settings: ${settingsLine(held)}.`,
    '',
    table(
      'contender | leases | heap / lease | Redis memory / lease | cycle | CPU / cycle: Redis / client | ' +
        'per extension: Redis / client | round trips / cycle | taking all',
      sc.held.map((c) => heldRow(name(c.contender), c)),
    ),
    chartLink(charts, 'scaling-heap.svg'),
    chartLink(charts, 'scaling-renewal.svg'),
    `**Waiters on one name**, settings: ${settingsLine(w)}. Handoff gap p50 / p99:`,
    '',
    pivot((c) => `${fmtMs(c.gap.p50)} / ${fmtMs(c.gap.p99)} ms${c.capped ? ` (${c.handoffs}, capped)` : ''}`),
    chartLink(charts, 'scaling-handoff.svg'),
    'Acquire attempts per handoff (commands per handoff in brackets):',
    '',
    pivot((c) => `${fmtNum(c.attempts)} (${fmtNum(c.perHandoff.commands)})`),
    chartLink(charts, 'scaling-attempts.svg'),
    'Idle load while one caller holds and the others wait: Redis commands/s (Redis CPU; waiting processes’ CPU):',
    '',
    pivot(
      (c) =>
        `${fmtNum(c.idle.commandsPerSecond)} (${fmtNum(c.idle.redisCpuPercent, 1)} %; ${fmtNum(c.idle.waiterCpuPercent, 1)} %)`,
    ),
    chartLink(charts, 'scaling-idle.svg'),
    'Heap per waiter (the waiting processes’ JS heap and array buffers after the callers settled, over two forced GCs):',
    '',
    pivot((c) => fmtBytes(c.heapPerWaiter)),
    chartLink(charts, 'scaling-waiter-heap.svg'),
  ];
}
