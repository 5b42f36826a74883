// Tables and line charts for `npm run bench:scaling` (the "How cost grows" section of
// docs/benchmarks.md). Charts go through the same vega-lite renderer as the main report.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type * as vl from 'vega-lite';
import { config, svg } from '../report/charts.ts';
import { fmtMs, fmtNum, table } from '../report/format.ts';
import type { HeldCell } from './held.ts';
import type { ScalingResults } from './results.ts';
import type { WaitersCell } from './waiters.ts';

interface Point {
  contender: string;
  x: number;
  y: number;
  panel: string;
}

/** One line per contender over a log x axis, one panel per `panel` value. */
export function lines(
  title: string,
  xTitle: string,
  yTitle: string,
  points: Point[],
  order: string[],
  yScale: 'log' | 'symlog' | 'linear',
  panels: string[],
  ticks: number[],
): vl.TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    config: { ...config, legend: { ...config.legend, orient: 'bottom' } },
    background: 'white',
    data: { values: points.filter((p) => Number.isFinite(p.y) && (yScale !== 'log' || p.y > 0)) },
    facet: { column: { field: 'panel', type: 'nominal', sort: panels, title: null } },
    resolve: { scale: { y: 'shared' } },
    spec: {
      width: panels.length > 1 ? 170 : 480,
      height: 200,
      mark: { type: 'line', point: { filled: true, size: 40 } },
      encoding: {
        x: {
          field: 'x',
          type: 'quantitative',
          title: xTitle,
          scale: { type: 'log' },
          axis: { values: ticks, format: '~s' },
        },
        y: {
          field: 'y',
          type: 'quantitative',
          title: yTitle,
          scale: yScale === 'linear' ? { zero: true } : { type: yScale },
        },
        color: { field: 'contender', type: 'nominal', sort: order, title: null },
      },
    },
  } as vl.TopLevelSpec;
}

export interface ScalingChart {
  file: string;
  title: string;
}

export async function renderScalingCharts(results: ScalingResults, dir: string): Promise<ScalingChart[]> {
  await mkdir(dir, { recursive: true });
  const label = (id: string) => results.contenders.find((c) => c.id === id)?.label ?? id;
  const order = results.contenders.map((c) => c.label);
  const panels = results.settings.waiters.processes.map((p) => `${p} process${p === 1 ? '' : 'es'}`);
  const panel = (p: number) => `${p} process${p === 1 ? '' : 'es'}`;
  const w = results.waiters;
  const measured = results.held.filter((c): c is HeldCell => !('skipped' in c));
  const heldCells = measured.filter((c) => !renewalFailed(c));
  const charts: { file: string; title: string; spec: vl.TopLevelSpec }[] = [];
  const waitersChart = (
    file: string,
    title: string,
    y: string,
    f: (c: (typeof w)[number]) => number,
    scale: 'log' | 'symlog',
  ) =>
    charts.push({
      file,
      title,
      spec: lines(
        title,
        'waiters (log)',
        y,
        w.map((c) => ({ contender: label(c.contender), x: c.waiters, y: f(c), panel: panel(c.processes) })),
        order,
        scale,
        panels,
        results.settings.waiters.waiters,
      ),
    });
  waitersChart(
    'scaling-handoff.svg',
    'Handoff gap p50 by waiters and processes (lower is better)',
    'ms (log)',
    (c) => c.gap.p50,
    'log',
  );
  waitersChart(
    'scaling-idle.svg',
    'Idle load: Redis commands/s while the waiters wait (lower is better)',
    'commands/s (symlog)',
    (c) => c.idle.commandsPerSecond,
    'symlog',
  );
  waitersChart(
    'scaling-attempts.svg',
    'Acquire attempts per handoff (1 = no herd)',
    'attempts (symlog)',
    (c) => c.attempts,
    'symlog',
  );
  const heldChart = (
    file: string,
    title: string,
    y: string,
    f: (c: (typeof heldCells)[number]) => number,
    scale: 'log' | 'linear',
  ) =>
    charts.push({
      file,
      title,
      spec: lines(
        title,
        'held leases (log)',
        y,
        (file === 'scaling-heap.svg' ? measured : heldCells).map((c) => ({
          contender: label(c.contender),
          x: c.leases,
          y: f(c),
          panel: '',
        })),
        order,
        scale,
        [''],
        results.settings.held.leases,
      ),
    });
  heldChart(
    'scaling-heap.svg',
    'JS heap per held lease (lower is better)',
    'KiB',
    (c) => c.heapPerLease / 1024,
    'linear',
  );
  heldChart(
    'scaling-renewal.svg',
    'Redis CPU per renewal cycle of all leases (lower is better)',
    'ms (log)',
    (c) => c.perCycle.redisCpuMs,
    'log',
  );
  heldChart(
    'scaling-renewal-client.svg',
    'Client CPU per renewal cycle of all leases (lower is better)',
    'ms (log)',
    (c) => c.perCycle.clientCpuMs,
    'log',
  );
  for (const chart of charts) await writeFile(join(dir, chart.file), await svg(chart.spec));
  return charts.map(({ file, title }) => ({ file, title }));
}

/** Most leases lost while held: the window's extension figures describe a failure, not a cycle. */
export const renewalFailed = (c: HeldCell) => c.lost * 2 >= c.leases;

/** Heap per lease at rest (the smallest of the samples) and, when larger, the largest. */
function heap(c: HeldCell): string {
  const low = (c.heapPerLease / 1024).toFixed(2);
  const high = (c.heapPerLeaseMax / 1024).toFixed(2);
  return high === low ? `${low} KiB` : `${low}-${high} KiB`;
}

export const START = '<!-- scaling:start -->';
export const END = '<!-- scaling:end -->';

/** The generated part of "How cost grows": settings, tables, charts (the reading is written by hand). */
export function scalingSection(results: ScalingResults, charts: ScalingChart[]): string {
  const label = (id: string) => results.contenders.find((c) => c.id === id)?.label ?? id;
  const s = results.settings;
  const chart = (file: string) => {
    const c = charts.find((x) => x.file === file);
    return c === undefined ? '' : `\n![${c.title}](benchmarks/${c.file})\n`;
  };
  // One row per cell, one column per contender: the curves read down a column.
  const ids = results.contenders.filter((c) => c.unavailable === undefined).map((c) => c.id);
  const grid = results.waiters.reduce<{ waiters: number; processes: number }[]>((acc, c) => {
    if (!acc.some((g) => g.waiters === c.waiters && g.processes === c.processes))
      acc.push({ waiters: c.waiters, processes: c.processes });
    return acc;
  }, []);
  const pivot = (f: (c: WaitersCell) => string) =>
    table(
      ['waiters', 'processes', ...ids.map(label)],
      grid.map((g) => [
        fmtNum(g.waiters, 0),
        String(g.processes),
        ...ids.map((id) => {
          const c = results.waiters.find(
            (x) => x.contender === id && x.waiters === g.waiters && x.processes === g.processes,
          );
          return c === undefined ? 'not run' : f(c);
        }),
      ]),
    );
  const capped = (c: WaitersCell) => (c.capped ? ` (${c.handoffs} handoffs, capped)` : '');
  const heldRows = results.held.map((c) =>
    'skipped' in c
      ? [label(c.contender), fmtNum(c.leases, 0), c.skipped, '', '', '', '', '', '', '']
      : renewalFailed(c)
        ? [
            label(c.contender),
            fmtNum(c.leases, 0),
            heap(c),
            `${(c.redisMemoryPerLease / 1024).toFixed(2)} KiB`,
            `renewal did not keep up: ${fmtNum(c.lost, 0)} of ${fmtNum(c.leases, 0)} leases lost`,
            '–',
            '–',
            '–',
            '–',
            `${(c.acquireMs / 1000).toFixed(2)} s`,
          ]
        : [
            label(c.contender),
            fmtNum(c.leases, 0),
            heap(c),
            `${(c.redisMemoryPerLease / 1024).toFixed(2)} KiB`,
            `${fmtNum(c.cycleMs, 0)} ms`,
            `${fmtMs(c.perCycle.redisCpuMs)} ms`,
            `${fmtMs(c.perCycle.clientCpuMs)} ms`,
            `${c.redisUsecPerExtension.toFixed(2)} / ${c.clientUsecPerExtension.toFixed(2)} us`,
            fmtNum(c.perCycle.reads),
            `${(c.acquireMs / 1000).toFixed(2)} s${c.lost > 0 ? `, ${fmtNum(c.lost, 0)} lost` : ''}`,
          ],
  );
  const m = results.machine;
  return [
    START,
    `Measured ${m.date.slice(0, 10)} by \`${results.command}\` (${(results.durationSeconds / 60).toFixed(1)} min, ` +
      `${m.cpus} × ${m.cpuModel}, Node ${m.node}, ${results.redisVersion}, load ${m.loadAverage.join(' ')} at start); ` +
      'raw numbers in [bench/results/scaling.json](../bench/results/scaling.json).',
    '',
    `**Waiters.** ${s.waiters.waiters.join(', ')} waiters on one lock name, spread over ${s.waiters.processes.join(', ')} worker ` +
      'processes (cells with fewer waiters than processes are not run). One more caller holds the lock first; ' +
      `after ${s.waiters.settleMs} ms of settling, the idle load is read over ${s.waiters.idleWindowMs} ms while it holds. ` +
      `Then up to ${s.waiters.handoffs} handoffs (capped at ${s.waiters.handoffCapMs / 1000} s of wall time per cell): the holder ` +
      'releases, the gap runs to the moment another caller’s acquire resolves, and the caller that released waits ' +
      `again once someone else holds it, so at every release exactly W callers wait. INFO is read just before each ` +
      `release and ${s.waiters.afterMs} ms after the next acquisition; *attempts* counts the acquire command in that ` +
      'window (script calls less the release for leasehold and @sesamecare-oss/redlock, `SET` calls for ' +
      'redis-semaphore and redlock-universal), so 1 is a handoff without a herd; for a polling peer it also counts ' +
      `its polls in the window. ttl ${s.waiters.ttl} ms; every library with its default retry settings (table "Contenders" above).`,
    '',
    'Handoff gap p50 / p99 (release sent → the next holder’s acquire resolved):',
    '',
    pivot((c) => `${fmtMs(c.gap.p50)} / ${fmtMs(c.gap.p99)} ms${capped(c)}`),
    chart('scaling-handoff.svg'),
    'Acquire attempts per handoff (commands per handoff in brackets):',
    '',
    pivot((c) => `${fmtNum(c.attempts)} (${fmtNum(c.perHandoff.commands)})`),
    chart('scaling-attempts.svg'),
    'Idle load while one caller holds and the waiters wait: Redis commands/s (Redis CPU; CPU of the waiting processes together, % of one core):',
    '',
    pivot(
      (c) =>
        `${fmtNum(c.idle.commandsPerSecond)} (${c.idle.redisCpuPercent.toFixed(1)} %; ${c.idle.waiterCpuPercent.toFixed(1)} %)`,
    ),
    chart('scaling-idle.svg'),
    `**Held leases.** One fresh worker process (\`--expose-gc\`) takes N leases on distinct names (ttl ` +
      `${s.held.ttl} ms, ${s.held.concurrency} acquisitions in flight) and keeps them, automatic extension running; after ` +
      `${s.held.warmupMs / 1000} s the window is ${s.held.windowMs / 1000} s. A renewal cycle is measured, not assumed: ` +
      'N divided by the extension script calls per second in the window. Per cycle: Redis CPU (`used_cpu_user+sys`), ' +
      'the process’s CPU (`process.cpuUsage`), socket reads on Redis (round trips, batched or not); per extension: ' +
      'Redis’s own time for the script call (`INFO commandstats` usec) and the client’s CPU. Heap per lease: JS heap ' +
      'plus array buffers after two forced GCs, sampled right after taking the leases and right after the window; ' +
      'when the two differ, both are shown (the larger one holds a renewal batch in flight).',
    '',
    table(
      [
        'contender',
        'leases',
        'heap / lease',
        'Redis memory / lease',
        'cycle',
        'Redis CPU / cycle',
        'client CPU / cycle',
        'per extension: Redis / client',
        'round trips / cycle',
        'taking all',
      ],
      heldRows,
    ),
    chart('scaling-heap.svg'),
    chart('scaling-renewal.svg'),
    chart('scaling-renewal-client.svg'),
    END,
  ].join('\n');
}
