import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { Results } from '../results.ts';
import { fmtMs, fmtNum } from './format.ts';

export interface Chart {
  file: string;
  title: string;
}

interface Row {
  contender: string;
  series: string;
  value: number;
  label: string;
}

export const width = 560;
export const font = 'Helvetica, Arial, sans-serif';
export const config = {
  font,
  axis: { labelFontSize: 11, titleFontSize: 11, labelLimit: 320 },
  legend: { labelFontSize: 11, titleFontSize: 11, orient: 'bottom' as const },
  title: { fontSize: 13, anchor: 'start' as const },
};

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
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width,
    height: { step: series.length > 2 ? 11 : 14 },
    config,
    background: 'white',
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
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width,
    height: { step: 22 },
    config,
    background: 'white',
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
 * intervals, single points for leasehold's modes and the floors. Log-log: the loads span four
 * orders of magnitude.
 */
function tradeoff(title: string, points: LoadPoint[]): vl.TopLevelSpec {
  const x = {
    field: 'load',
    type: 'quantitative' as const,
    title: 'Redis commands/s during the idle-waiter handoffs (log)',
    scale: { type: 'log' as const },
  };
  const y = {
    field: 'p50',
    type: 'quantitative' as const,
    title: 'handoff gap p50, ms (log)',
    scale: { type: 'log' as const },
  };
  const color = {
    field: 'family',
    type: 'nominal' as const,
    title: null,
    legend: { columns: 3, labelLimit: 240 },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width,
    height: 300,
    config,
    background: 'white',
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
  const label = new Map(results.contenders.map((c) => [c.id, c.label]));
  const order = results.contenders.map((c) => c.label);
  const name = (id: string) => label.get(id) ?? id;
  const charts: { file: string; title: string; spec: vl.TopLevelSpec }[] = [];
  const s = results.scenarios;

  if (s.handoff !== undefined) {
    const rows: Row[] = [];
    for (const [id, r] of Object.entries(s.handoff.contenders)) {
      rows.push({ contender: name(id), series: 'p50', value: r.gap.p50, label: `${fmtMs(r.gap.p50)} ms` });
      rows.push({ contender: name(id), series: 'p99', value: r.gap.p99, label: `${fmtMs(r.gap.p99)} ms` });
    }
    const title = `Handoff gap between ${s.handoff.settings['workers']} processes (lower is better)`;
    charts.push({
      file: 'handoff.svg',
      title,
      spec: grouped(title, 'release → next acquire, ms (log)', rows, order, 'log'),
    });
  }
  if (s.idleHandoff !== undefined) {
    const points: LoadPoint[] = [];
    for (const [id, r] of Object.entries(s.idleHandoff.contenders)) {
      if (!(r.commandsPerSecond! > 0)) continue;
      points.push({ ...family(id, name(id)), load: r.commandsPerSecond!, p50: r.gap.p50 });
    }
    for (const [what, f] of [
      ['direct-grant floor', s.idleHandoff.grantFloor],
      ['wake-all floor', s.idleHandoff.floor],
    ] as const) {
      if (f?.commandsPerSecond !== undefined && f.commandsPerSecond > 0)
        points.push({ family: what, label: what, load: f.commandsPerSecond, p50: f.gap.p50 });
    }
    if (points.length > 0) {
      const title =
        'Handoff to idle waiters: latency against the Redis load paid for it (lower left is better)';
      charts.push({ file: 'idle-tradeoff.svg', title, spec: tradeoff(title, points) });
    }
  }
  if (s.loss !== undefined) {
    const rows: Row[] = [];
    for (const [id, r] of Object.entries(s.loss.contenders)) {
      for (const kind of ['del', 'takeover'] as const) {
        const what = kind === 'del' ? 'after DEL' : 'after takeover';
        for (const stat of ['p50', 'p99'] as const) {
          const v = r[kind][stat];
          if (Number.isFinite(v))
            rows.push({ contender: name(id), series: `${stat} ${what}`, value: v, label: fmtMs(v) });
        }
      }
    }
    const title = 'Loss detection: event → holder’s signal (lower is better)';
    charts.push({ file: 'loss.svg', title, spec: grouped(title, 'ms (log)', rows, order, 'log') });
  }
  if (s.crash !== undefined) {
    const rows: Row[] = [];
    for (const [id, r] of Object.entries(s.crash.contenders)) {
      for (const v of r.samples)
        rows.push({ contender: name(id), series: 'sample', value: v, label: fmtMs(v) });
    }
    const title = 'Crash recovery: wait beyond the dead holder’s expiry, every sample (lower is better)';
    charts.push({ file: 'crash.svg', title, spec: strip(title, 'ms (symlog)', rows, order) });
  }
  if (s.idle !== undefined) {
    const rows = Object.entries(s.idle.contenders).map(([id, r]) => ({
      contender: name(id),
      series: 'commands/s',
      value: r.commandsPerSecond,
      label: fmtNum(r.commandsPerSecond),
    }));
    const title = `Idle load: Redis commands/s while ${s.idle.settings['waiters']} waiters wait (lower is better)`;
    charts.push({
      file: 'idle.svg',
      title,
      spec: grouped(title, 'commands/s (symlog)', rows, order, 'symlog'),
    });
  }
  if (s.uncontended !== undefined) {
    const rows: Row[] = [];
    const inFlight = s.uncontended.settings['inFlight'];
    for (const [id, r] of Object.entries(s.uncontended.contenders)) {
      const one = r.sequential.opsPerSecond;
      const many = r.parallel.opsPerSecond;
      rows.push({ contender: name(id), series: '1 in flight', value: one, label: fmtNum(one) });
      rows.push({ contender: name(id), series: `${inFlight} in flight`, value: many, label: fmtNum(many) });
    }
    const title = 'Uncontended acquire + release throughput (higher is better)';
    charts.push({ file: 'uncontended.svg', title, spec: grouped(title, 'pairs/s', rows, order, 'linear') });
  }
  if (s.scale !== undefined) {
    const rows: Row[] = [];
    for (const [id, r] of Object.entries(s.scale.contenders)) {
      const lease = r.held.heapPerLease / 1024;
      const waiter = r.waiters.heapPerWaiter / 1024;
      rows.push({
        contender: name(id),
        series: 'per held lease',
        value: lease,
        label: `${lease.toFixed(2)} KiB`,
      });
      rows.push({
        contender: name(id),
        series: 'per waiter',
        value: waiter,
        label: `${waiter.toFixed(2)} KiB`,
      });
    }
    const title = 'JS heap per held lease and per waiter (lower is better)';
    charts.push({ file: 'memory.svg', title, spec: grouped(title, 'KiB', rows, order, 'linear') });
  }
  const written: Chart[] = [];
  for (const chart of charts) {
    await writeFile(join(dir, chart.file), await svg(chart.spec));
    written.push({ file: chart.file, title: chart.title });
  }
  return written;
}
