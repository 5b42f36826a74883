import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { Results } from '../results.ts';
import { config, frame, lineCharts, type Spec } from './charts-lines.ts';
import { fmtMs, fmtNum } from './format.ts';
import { type Chart, contenderName } from './section.ts';

interface Row {
  contender: string;
  series: string;
  value: number;
  label: string;
}

const width = 560;
const font = config.font;

/**
 * Horizontal grouped marks, one group per contender. `bars` for linear quantities that start at 0;
 * dots for log scales (a bar on a log axis has no honest origin).
 */
function grouped(
  title: string,
  axis: string,
  rows: Row[],
  order: string[],
  scale: 'linear' | 'log' | 'symlog',
): vl.TopLevelSpec {
  const series = [...new Set(rows.map((r) => r.series))];
  const y = { field: 'contender', type: 'nominal' as const, sort: order, title: null };
  const x = {
    field: 'value',
    type: 'quantitative' as const,
    title: axis,
    scale: scale === 'linear' ? { zero: true } : { type: scale },
  };
  const color = { field: 'series', type: 'nominal' as const, sort: series, title: null };
  const yOffset = { field: 'series', type: 'nominal' as const, sort: series };
  const mark =
    scale === 'linear' ? { type: 'bar' as const } : { type: 'point' as const, filled: true, size: 70 };
  return {
    ...frame(title),
    width,
    height: { step: series.length > 2 ? 11 : 14 },
    data: { values: rows },
    encoding: { y, yOffset },
    layer: [
      { mark, encoding: { x, color } },
      {
        mark: { type: 'text', align: 'left', dx: 6, fontSize: 9, font },
        encoding: { x, text: { field: 'label', type: 'nominal' } },
      },
    ],
  } as vl.TopLevelSpec;
}

/** Every sample as a tick, one row per contender (crash recovery). */
function strip(title: string, axis: string, rows: Row[], order: string[]): vl.TopLevelSpec {
  return {
    ...frame(title),
    width,
    height: { step: 22 },
    data: { values: rows },
    mark: { type: 'tick', thickness: 2 },
    encoding: {
      y: { field: 'contender', type: 'nominal', sort: order, title: null },
      x: { field: 'value', type: 'quantitative', title: axis, scale: { type: 'symlog' } },
      color: { field: 'contender', type: 'nominal', sort: order, legend: null },
    },
  } as vl.TopLevelSpec;
}

/** One point of the latency-versus-load chart. */
interface LoadPoint {
  family: string;
  label: string;
  load: number;
  p50: number;
}

/**
 * Latency against the load paid for it (section 2b): one line per library over its poll
 * intervals, single points for leasehold's modes and the direct-grant floor. Log-log: the loads span four
 * orders of magnitude.
 */
function tradeoff(title: string, points: LoadPoint[]): vl.TopLevelSpec {
  const log = (field: string, axis: string) =>
    ({ field, type: 'quantitative', title: axis, scale: { type: 'log' } }) as const;
  const x = log('load', 'Redis commands/s during the idle-waiter handoffs (log)');
  const y = log('p50', 'handoff gap p50, ms (log)');
  const color = {
    field: 'family',
    type: 'nominal',
    title: null,
    legend: { columns: 3, labelLimit: 240 },
  } as const;
  return {
    ...frame(title),
    width,
    height: 300,
    data: { values: points },
    encoding: { x, y, color },
    layer: [
      { mark: { type: 'line', point: { filled: true, size: 60 } }, encoding: { order: { field: 'load' } } },
      {
        mark: { type: 'text', align: 'left', dx: 6, dy: -6, fontSize: 9, font },
        encoding: { text: { field: 'label', type: 'nominal' }, color: { value: '#444' } },
      },
    ],
  } as vl.TopLevelSpec;
}

/** The chart's family and point label of an idle-handoff contender. */
function family(id: string, label: string): { family: string; label: string } {
  const poll = /poll-(\d+)ms$/.exec(id)?.[1] ?? (id.endsWith('-tuned') ? '1' : undefined);
  if (id.startsWith('leasehold'))
    return {
      family: label.replace(', lowLatency', ''),
      label: id.endsWith('low-latency') ? 'lowLatency' : 'default',
    };
  const library = id.replace(/-(tuned|poll-\d+ms)$/, '');
  return { family: library, label: poll === undefined ? 'defaults' : `${poll} ms` };
}

/** Renders a vega-lite spec to an SVG document (no browser: vega's headless renderer). */
export async function svg(spec: vl.TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const out = await view.toSVG();
  view.finalize();
  return `${out}\n`;
}

/** Renders every chart the results allow into `dir`; returns what was written, in report order. */
export async function renderCharts(results: Results, dir: string): Promise<Chart[]> {
  await mkdir(dir, { recursive: true });
  const order = results.contenders.map((c) => c.label);
  const name = contenderName(results);
  const charts: Spec[] = [];
  const s = results.scenarios;
  /** A grouped chart: one mark per contender and series (those with a finite value). */
  const bars = <C>(
    file: string,
    title: string,
    axis: string,
    scale: 'linear' | 'log' | 'symlog',
    contenders: Record<string, C>,
    series: [string, (c: C, id: string) => number | undefined][],
    format: (v: number) => string,
  ) => {
    const rows = Object.entries(contenders).flatMap(([id, c]) =>
      series.flatMap(([what, f]) => {
        const value = f(c, id) ?? Number.NaN;
        return Number.isFinite(value)
          ? [{ contender: name(id), series: what, value, label: format(value) }]
          : [];
      }),
    );
    charts.push({ file, title, spec: grouped(title, axis, rows, order, scale) });
  };
  const ms = (v: number) => `${fmtMs(v)} ms`;

  if (s.uncontended !== undefined)
    bars(
      'uncontended.svg',
      'Uncontended acquire + release throughput (higher is better)',
      'pairs/s',
      'linear',
      s.uncontended.contenders,
      [
        ['1 in flight', (r) => r.sequential.opsPerSecond],
        [`${s.uncontended.settings['inFlight']} in flight`, (r) => r.parallel.opsPerSecond],
      ],
      fmtNum,
    );
  if (s.handoff !== undefined)
    bars(
      'handoff.svg',
      `Handoff gap between ${s.handoff.settings['workers']} processes (lower is better)`,
      'release → next acquire, ms (log)',
      'log',
      s.handoff.contenders,
      [
        ['p50', (r) => r.gap.p50],
        ['p99', (r) => r.gap.p99],
      ],
      ms,
    );
  if (s.idleHandoff !== undefined) {
    const points: LoadPoint[] = [];
    for (const [id, r] of Object.entries(s.idleHandoff.contenders))
      if ((r.commandsPerSecond ?? 0) > 0)
        points.push({ ...family(id, name(id)), load: r.commandsPerSecond!, p50: r.gap.p50 });
    const floor = s.idleHandoff.grantFloor;
    if ((floor?.commandsPerSecond ?? 0) > 0) {
      const what = 'direct-grant floor';
      points.push({ family: what, label: what, load: floor!.commandsPerSecond!, p50: floor!.gap.p50 });
    }
    const title =
      'Handoff to idle waiters: latency against the Redis load paid for it (lower left is better)';
    if (points.length > 0) charts.push({ file: 'idle-tradeoff.svg', title, spec: tradeoff(title, points) });
  }
  if (s.loss !== undefined)
    bars(
      'loss.svg',
      'Loss detection: event → holder’s signal (lower is better)',
      'ms (log)',
      'log',
      s.loss.contenders,
      [
        ['p50 after DEL', (r) => r.del.p50],
        ['p99 after DEL', (r) => r.del.p99],
        ['p50 after takeover', (r) => r.takeover.p50],
        ['p99 after takeover', (r) => r.takeover.p99],
      ],
      fmtMs,
    );
  if (s.crash !== undefined) {
    const rows = Object.entries(s.crash.contenders).flatMap(([id, r]) =>
      r.samples.map((v) => ({ contender: name(id), series: 'sample', value: v, label: fmtMs(v) })),
    );
    const title = 'Crash recovery: wait beyond the dead holder’s expiry, every sample (lower is better)';
    charts.push({ file: 'crash.svg', title, spec: strip(title, 'ms (symlog)', rows, order) });
  }
  if (s.idle !== undefined)
    bars(
      'idle.svg',
      `Idle load: Redis commands/s while ${s.idle.settings['waiters']} waiters wait (lower is better)`,
      'commands/s (symlog)',
      'symlog',
      s.idle.contenders,
      [['commands/s', (r) => r.commandsPerSecond]],
      fmtNum,
    );
  charts.push(...lineCharts(results, name, order));
  for (const chart of charts) await writeFile(join(dir, chart.file), await svg(chart.spec));
  return charts.map(({ file, title }) => ({ file, title }));
}
