// The table and chart of `npm run bench:cluster` in docs/benchmarks.md ("Redis Cluster: does it
// scale with masters?"), between the START and END markers inside the hand-written block.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { median } from '../lib/stats.ts';
import { svg } from '../report/charts.ts';
import { fmtMs, table } from '../report/format.ts';
import { lines } from '../scaling/report.ts';
import { type ClusterCell, type ClusterResults, type Shape, shapeLabel, topologyLabel } from './results.ts';

export const START = '<!-- cluster:start -->';
export const END = '<!-- cluster:end -->';
const CHART = 'cluster-throughput.svg';

/** A cell's medians over its rounds. */
function medians(cell: ClusterCell) {
  return {
    opsPerSecond: median(cell.rounds.map((r) => r.opsPerSecond)),
    p50: median(cell.rounds.map((r) => r.p50)),
    clientCpu: median(cell.rounds.map((r) => r.clientCpu)),
    busiest: median(cell.rounds.map((r) => Math.max(...r.redisCpu))),
    redisTotal: median(cell.rounds.map((r) => r.redisCpu.reduce((a, b) => a + b, 0))),
  };
}

const pct = (cores: number) => `${(cores * 100).toFixed(0)} %`;
const rate = (x: number) => `${Math.round(x).toLocaleString('en-US')}/s`;

function find(results: ClusterResults, id: string, masters: number, shape: Shape): ClusterCell | undefined {
  return results.cells.find(
    (c) =>
      c.contender === id &&
      c.masters === masters &&
      c.processes === shape.processes &&
      c.lanes === shape.lanes,
  );
}

export async function renderClusterChart(results: ClusterResults, dir: string): Promise<string> {
  const label = (id: string) => results.contenders.find((c) => c.id === id)?.label ?? id;
  const shapes = results.settings.shapes.filter((s) => s.lanes > 1);
  const spec = lines(
    'Acquire+release/s on a Redis Cluster, by masters (higher is better)',
    'masters',
    'acquire+release/s',
    results.cells
      .filter((c) => c.lanes > 1 && c.masters > 0)
      .map((c) => ({
        contender: label(c.contender),
        x: c.masters,
        y: medians(c).opsPerSecond,
        panel: shapeLabel(c),
      })),
    results.contenders.map((c) => c.label),
    'linear',
    shapes.map(shapeLabel),
    results.settings.masters.filter((m) => m > 0),
  );
  await writeFile(join(dir, CHART), await svg(spec));
  return CHART;
}

export function clusterSection(results: ClusterResults, chart: string): string {
  const { settings, machine } = results;
  const out: string[] = [START, ''];
  out.push(
    `Measured ${machine.date.slice(0, 10)} at ${machine.commit} on ${machine.cpus} × ${machine.cpuModel}, ` +
      `Node ${machine.node}, ${machine.redisServer.split(' sha=')[0]}; ${settings.rounds} rounds (median shown), ` +
      `${settings.windowMs} ms windows after ${settings.warmupMs} ms of warm-up, ttl ${settings.ttl} ms, ` +
      'masters without replicas. `npm run bench:cluster` rewrites this part.',
    '',
  );
  for (const shape of settings.shapes) {
    const one = shape.lanes === 1;
    out.push(
      `**${shapeLabel(shape)}**${one ? ' (cell: acquire+release/s, p50)' : ' (cell: acquire+release/s; client processes’ CPU; busiest master’s Redis CPU)'}`,
      '',
    );
    const rows = results.contenders.map((c) => [
      c.label,
      ...settings.masters.map((m) => {
        const cell = find(results, c.id, m, shape);
        if (cell === undefined || cell.rounds.length === 0) return '–';
        const x = medians(cell);
        return one
          ? `${rate(x.opsPerSecond)}, ${fmtMs(x.p50)}`
          : `${rate(x.opsPerSecond)}; ${pct(x.clientCpu)}; ${pct(x.busiest)}`;
      }),
    ]);
    out.push(table(['contender', ...settings.masters.map(topologyLabel)], rows), '');
  }
  if (results.failures.length > 0) {
    out.push('Failed cells:', '');
    // One line per cell and error, however many rounds it failed in.
    const lines = new Map<string, number>();
    for (const f of results.failures) {
      const line = `${f.contender}, ${topologyLabel(f.masters)}, ${shapeLabel(f)}: ${f.error}`;
      lines.set(line, (lines.get(line) ?? 0) + 1);
    }
    for (const [line, n] of lines) out.push(`- ${line} (${n} of ${results.settings.rounds} rounds)`);
    out.push('');
  }
  out.push(`![Acquire+release/s by masters](benchmarks/${chart})`, '', END);
  return out.join('\n');
}
