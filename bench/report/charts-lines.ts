// The line charts of docs/benchmarks.md: how cost grows (section 6) and Redis Cluster (section 8),
// one line per contender over a log x axis, drawn through the same renderer as the other charts.
import type * as vl from 'vega-lite';
import { median } from '../lib/stats.ts';
import type { Results } from '../results.ts';
import { shapeLabel } from '../scenarios/cluster.ts';
import type { HeldCell } from '../scenarios/scale-held.ts';
import type { WaitersCell } from '../scenarios/scale-waiters.ts';
import { renewalFailed } from './section-load.ts';

interface Point {
  contender: string;
  x: number;
  y: number;
  panel: string;
}

export const config = {
  font: 'Helvetica, Arial, sans-serif',
  axis: { labelFontSize: 11, titleFontSize: 11, labelLimit: 320 },
  legend: { labelFontSize: 11, titleFontSize: 11, orient: 'bottom' as const },
  title: { fontSize: 13, anchor: 'start' as const },
};

/** What every chart's spec opens with. */
export const frame = (title: string) => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
  title,
  config,
  background: 'white',
});

function lines(
  title: string,
  axes: [string, string],
  points: Point[],
  order: string[],
  yScale: 'log' | 'symlog' | 'linear',
  panels: string[],
  ticks: number[],
  xScale: 'log' | 'linear' = 'log',
): vl.TopLevelSpec {
  return {
    ...frame(title),
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
          title: axes[0],
          scale: { type: xScale },
          axis: { values: ticks, format: '~s' },
        },
        y: {
          field: 'y',
          type: 'quantitative',
          title: axes[1],
          scale: yScale === 'linear' ? { zero: true } : { type: yScale },
        },
        color: { field: 'contender', type: 'nominal', sort: order, title: null },
      },
    },
  } as vl.TopLevelSpec;
}

export type Spec = { file: string; title: string; spec: vl.TopLevelSpec };

/** The scale and cluster charts the results allow. */
export function lineCharts(results: Results, name: (id: string) => string, order: string[]): Spec[] {
  const charts: Spec[] = [];
  const add = (file: string, title: string, spec: (title: string) => vl.TopLevelSpec) =>
    charts.push({ file, title, spec: spec(title) });
  const sc = results.scenarios.scale;
  if (sc !== undefined && sc.waiters.length > 0) {
    const cells = sc.waiters;
    const settings = sc.settings.waiters;
    const panel = (p: number) => `${p} process${p === 1 ? '' : 'es'}`;
    const w = (y: string, f: (c: WaitersCell) => number, scale: 'log' | 'symlog') => (title: string) =>
      lines(
        title,
        ['waiters (log)', y],
        cells.map((c) => ({
          contender: name(c.contender),
          x: c.waiters,
          y: f(c),
          panel: panel(c.processes),
        })),
        order,
        scale,
        settings.processes.map(panel),
        settings.waiters,
      );
    add(
      'scaling-handoff.svg',
      'Handoff gap p50 by waiters and processes (lower is better)',
      w('ms (log)', (c) => c.gap.p50, 'log'),
    );
    add(
      'scaling-idle.svg',
      'Idle load: Redis commands/s while the waiters wait (lower is better)',
      w('commands/s (symlog)', (c) => c.idle.commandsPerSecond, 'symlog'),
    );
    add(
      'scaling-waiter-heap.svg',
      'JS heap per waiter on one name (lower is better)',
      w('KiB (log)', (c) => c.heapPerWaiter / 1024, 'log'),
    );
    add(
      'scaling-attempts.svg',
      'Acquire attempts per handoff (1 = no herd)',
      w('attempts (symlog)', (c) => c.attempts, 'symlog'),
    );
  }
  const measured = (sc?.held ?? []).filter((c): c is HeldCell => !('skipped' in c));
  if (sc !== undefined && measured.length > 0) {
    const ticks = sc.settings.held.leases;
    const h =
      (y: string, cells: HeldCell[], f: (c: HeldCell) => number, scale: 'log' | 'linear') =>
      (title: string) =>
        lines(
          title,
          ['held leases (log)', y],
          cells.map((c) => ({ contender: name(c.contender), x: c.leases, y: f(c), panel: '' })),
          order,
          scale,
          [''],
          ticks,
        );
    const renewing = measured.filter((c) => !renewalFailed(c));
    add(
      'scaling-heap.svg',
      'JS heap per held lease (lower is better)',
      h('KiB', measured, (c) => c.heapPerLease / 1024, 'linear'),
    );
    add(
      'scaling-renewal.svg',
      'Redis CPU per renewal cycle of all leases (lower is better)',
      h('ms (log)', renewing, (c) => c.perCycle.redisCpuMs, 'log'),
    );
  }
  const cl = results.scenarios.cluster;
  if (cl?.cells.some((c) => c.masters > 0)) {
    const shapes = cl.settings.shapes.filter((s) => s.lanes > 1);
    add(
      'cluster-throughput.svg',
      'Acquire+release/s on a Redis Cluster, by masters (higher is better)',
      (title) =>
        lines(
          title,
          ['masters', 'acquire+release/s'],
          cl.cells
            .filter((c) => c.lanes > 1 && c.masters > 0)
            .map((c) => ({
              contender: name(c.contender),
              x: c.masters,
              y: median(c.rounds.map((r) => r.opsPerSecond)),
              panel: shapeLabel(c),
            })),
          order,
          'linear',
          shapes.map(shapeLabel),
          cl.settings.masters.filter((m) => m > 0),
          'linear',
        ),
    );
  }
  return charts;
}
