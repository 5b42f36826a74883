import type { Summary } from '../lib/stats.ts';
import type { Results } from '../results.ts';
import { heldFor, waitersFor } from '../scenarios/scale.ts';
import { fmtBytes, fmtMs, fmtNum, table } from './format.ts';

/**
 * "This tree against a baseline commit, same run": each leasehold contender next to its
 * `leasehold-baseline-*` twin (bench --baseline=<commit>). Both columns come from one run, so that
 * machine drift does not pass for a change; where a scenario has rounds, the per-round range says
 * how far apart two measurements of the same build land.
 */

interface Figure {
  label: string;
  /** The run's figure (median of rounds where there are rounds), and each round's own value. */
  read(results: Results, id: string): { value: number; rounds: number[] } | undefined;
  format(value: number): string;
  better: 'lower' | 'higher';
}

const ms = (v: number) => `${fmtMs(v)} ms`;
const rate = (v: number) => `${fmtNum(v)}/s`;
/** A figure read from a scenario's medians (`whole`) and from each of its rounds alike. */
const perRound =
  <X>(of: (r: Results, id: string) => { whole: X; rounds: X[] } | undefined) =>
  (label: string, pick: (x: X) => number, format: (v: number) => string): Figure => ({
    label,
    read: (r, id) => {
      const c = of(r, id);
      return c && { value: pick(c.whole), rounds: c.rounds.map(pick) };
    },
    format,
    better: format === ms ? 'lower' : 'higher',
  });
/** The uncontended scenario, whose medians and rounds have one shape. */
const u = perRound((r, id) => {
  const c = r.scenarios.uncontended?.contenders[id];
  return c && { whole: c, rounds: c.rounds };
});
/** The handoff scenario: its gap summary and rate, then each round's. */
const h = perRound<Summary & { handoffsPerSecond: number }>((r, id) => {
  const c = r.scenarios.handoff?.contenders[id];
  return c && { whole: { ...c.gap, handoffsPerSecond: c.handoffsPerSecond }, rounds: c.rounds };
});
/** A figure measured once per run. */
const once = (
  label: string,
  value: (r: Results, id: string) => number | undefined,
  format: (v: number) => string,
): Figure => ({
  label,
  read: (r, id) => {
    const v = value(r, id);
    return v === undefined ? undefined : { value: v, rounds: [] };
  },
  format,
  better: 'lower',
});
const figures: Figure[] = [
  u('uncontended acquire+release, 1 in flight, p50', (x) => x.sequential.p50, ms),
  u('uncontended acquire+release/s, 1 in flight', (x) => x.sequential.opsPerSecond, rate),
  u('uncontended acquire+release/s, 64 in flight', (x) => x.parallel.opsPerSecond, rate),
  h('handoff gap p50', (x) => x.p50, ms),
  h('handoff gap p99', (x) => x.p99, ms),
  h('handoffs/s', (x) => x.handoffsPerSecond, rate),
  once('heap per held lease', (r, id) => heldFor(r.scenarios.scale, id)?.heapPerLease, fmtBytes),
  once('client CPU per renewal cycle', (r, id) => heldFor(r.scenarios.scale, id)?.perCycle.clientCpuMs, ms),
  once(
    'heap per waiter (most waiters in one process)',
    (r, id) => waitersFor(r.scenarios.scale, id)?.heapPerWaiter,
    fmtBytes,
  ),
];

/** The figure, with the range of its rounds when it has more than one. */
function cell(figure: Figure, x: { value: number; rounds: number[] }): string {
  const rounds = x.rounds.filter((v) => Number.isFinite(v));
  if (rounds.length < 2) return figure.format(x.value);
  return `${figure.format(x.value)} (${figure.format(Math.min(...rounds))} – ${figure.format(Math.max(...rounds))})`;
}

/** After relative to before, signed so that + is better. */
function change(figure: Figure, before: number, after: number): string {
  if (!Number.isFinite(before) || !Number.isFinite(after) || before === 0) return '–';
  const better = figure.better === 'higher' ? after / before - 1 : before / after - 1;
  return `${better >= 0 ? '+' : '−'}${Math.abs(better * 100).toFixed(1)} %`;
}

/** The table (markdown), or '' when the run measured no baseline build. */
export function versus(results: Results): string {
  const pairs = results.contenders
    .filter((c) => c.library === 'leasehold' && c.unavailable === undefined && !c.id.includes('-baseline-'))
    .map((c) => ({
      current: c,
      baseline: results.contenders.find(
        (b) => b.id === c.id.replace('leasehold-', 'leasehold-baseline-') && b.unavailable === undefined,
      ),
    }))
    .filter((p) => p.baseline !== undefined);
  if (pairs.length === 0) return '';
  const commit = results.baseline?.commit ?? 'baseline';
  const rows: string[][] = [];
  for (const figure of figures) {
    for (const { current, baseline } of pairs) {
      const before = figure.read(results, baseline!.id);
      const after = figure.read(results, current.id);
      if (before === undefined || after === undefined) continue;
      rows.push([
        figure.label,
        current.settings['driver'] === undefined ? current.label : String(current.settings['driver']),
        cell(figure, before),
        cell(figure, after),
        change(figure, before.value, after.value),
      ]);
    }
  }
  const head = [
    'figure',
    'driver',
    `before: \`${commit}\``,
    `after: \`${results.machine.commit}\``,
    'change (+ is better)',
  ];
  return table(head, rows, ['l', 'l', 'r', 'r', 'r']);
}
