// Sections 7-9 of docs/benchmarks.md: the same lock elsewhere: on a Redis Cluster, on each server
// line, on PostgreSQL.
import { median } from '../lib/stats.ts';
import type { Results } from '../results.ts';
import { cellOf, shapeLabel, topologyLabel } from '../scenarios/cluster.ts';
import { fmtMs, fmtNum, table } from './format.ts';
import { notifiedCells } from './headline.ts';
import { type Chart, chartLink, contenderName, heading, settingsLine } from './section.ts';

const pct = (cores: number) => `${(cores * 100).toFixed(0)} %`;

/** 7. Redis Cluster: acquire + release/s by masters, beside one plain redis-server. */
export function clusterSection(results: Results, charts: Chart[]): string[] {
  const cl = results.scenarios.cluster;
  if (cl === undefined) return [];
  const name = contenderName(results);
  const s = cl.settings;
  const ids = [...new Set(cl.cells.map((c) => c.contender))];
  const out = heading('## 7. Redis Cluster: does it scale with masters?', s);
  for (const shape of s.shapes) {
    const one = shape.lanes === 1;
    out.push(
      `**${shapeLabel(shape)}** (${one ? 'pairs/s, p50' : 'pairs/s; client processes’ CPU; busiest master’s Redis CPU'})`,
      '',
      table(
        ['contender', ...s.masters.map(topologyLabel)],
        ids.map((id) => [
          name(id),
          ...s.masters.map((m) => {
            const cell = cellOf(cl.cells, id, m, shape);
            if (cell === undefined || cell.rounds.length === 0) return '–';
            const ops = `${fmtNum(median(cell.rounds.map((r) => r.opsPerSecond)), 0)}/s`;
            if (one) return `${ops}, ${fmtMs(median(cell.rounds.map((r) => r.p50)))} ms`;
            const client = pct(median(cell.rounds.map((r) => r.clientCpu)));
            return `${ops}; ${client}; ${pct(median(cell.rounds.map((r) => Math.max(...r.redisCpu))))}`;
          }),
        ]),
      ),
      '',
    );
  }
  return [...out, chartLink(charts, 'cluster-throughput.svg')];
}

/** 8. The notification-sensitive figures on each server line. */
export function serversSection(results: Results): string[] {
  const sv = results.scenarios.servers;
  if (sv === undefined) return [];
  const name = contenderName(results);
  const rows = sv.lines.flatMap((l) =>
    [...new Set(Object.keys(l.handoff?.contenders ?? l.idle?.contenders ?? {}))].map((id) => [
      `${l.line} (${l.server})`,
      name(id),
      ...notifiedCells(l, id),
    ]),
  );
  return [
    '## 8. Per server line',
    '',
    table(
      'server line | library | handoff gap p50 / p99 | loss detected p99 (DEL / takeover) | ' +
        'crash: wait beyond TTL p50 | idle Redis commands/s',
      rows,
    ),
    ...(sv.skipped.length === 0
      ? []
      : ['', `Not run: ${sv.skipped.map((s) => `${s.line} (${s.why})`).join('; ')}.`]),
    '',
  ];
}

/** 9. PostgreSQL: leasehold beside session and polled advisory locks (docs/postgres.md quotes it). */
export function postgresSection(results: Results): string[] {
  const pg = results.scenarios.postgres;
  if (pg === undefined) return [];
  const s = pg.settings;
  const ms = (x: { p50: number; p99: number } | undefined) =>
    x === undefined ? '–' : `${fmtMs(x.p50)} / ${fmtMs(x.p99)}`;
  return [
    '## 9. PostgreSQL',
    '',
    `${pg.server}, settings: ${settingsLine(s)}.`,
    '',
    table(
      'contender | handoff p50 / p99 (ms) | loss detected p50 / p99 (ms) | idle load (server CPU, ms/s) | ' +
        'uncontended 1 / 16 in flight (pairs/s)',
      Object.entries(pg.contenders).map(([id, r]) => [
        r.label ?? id,
        ms(r.handoff),
        ms(r.loss),
        r.idleCpu === undefined ? '–' : fmtNum(r.idleCpu, 1),
        r.uncontended === undefined
          ? '–'
          : `${fmtNum(r.uncontended[1], 0)} / ${fmtNum(r.uncontended[16], 0)}`,
      ]),
    ),
    '',
  ];
}
