import type { Results } from '../results.ts';
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

const figures: Figure[] = [
  {
    label: 'uncontended acquire+release, 1 in flight, p50',
    read: (r, id) => {
      const c = r.scenarios.uncontended?.contenders[id];
      return c && { value: c.sequential.p50, rounds: c.rounds.map((x) => x.sequential.p50) };
    },
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'uncontended acquire+release/s, 1 in flight',
    read: (r, id) => {
      const c = r.scenarios.uncontended?.contenders[id];
      return (
        c && { value: c.sequential.opsPerSecond, rounds: c.rounds.map((x) => x.sequential.opsPerSecond) }
      );
    },
    format: (v) => `${fmtNum(v)}/s`,
    better: 'higher',
  },
  {
    label: 'uncontended acquire+release/s, 64 in flight',
    read: (r, id) => {
      const c = r.scenarios.uncontended?.contenders[id];
      return c && { value: c.parallel.opsPerSecond, rounds: c.rounds.map((x) => x.parallel.opsPerSecond) };
    },
    format: (v) => `${fmtNum(v)}/s`,
    better: 'higher',
  },
  {
    label: 'handoff gap p50',
    read: (r, id) => {
      const c = r.scenarios.handoff?.contenders[id];
      return c && { value: c.gap.p50, rounds: c.rounds.map((x) => x.p50) };
    },
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'handoff gap p99',
    read: (r, id) => {
      const c = r.scenarios.handoff?.contenders[id];
      return c && { value: c.gap.p99, rounds: c.rounds.map((x) => x.p99) };
    },
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'handoffs/s',
    read: (r, id) => {
      const c = r.scenarios.handoff?.contenders[id];
      return c && { value: c.handoffsPerSecond, rounds: c.rounds.map((x) => x.handoffsPerSecond) };
    },
    format: (v) => `${fmtNum(v)}/s`,
    better: 'higher',
  },
  {
    label: 'heap per held lease',
    read: (r, id) => {
      const c = r.scenarios.scale?.contenders[id];
      return c && { value: c.held.heapPerLease, rounds: [] };
    },
    format: fmtBytes,
    better: 'lower',
  },
  {
    label: 'RSS per held lease',
    read: (r, id) => {
      const c = r.scenarios.scale?.contenders[id];
      return c && { value: c.held.rssPerLease, rounds: [] };
    },
    format: fmtBytes,
    better: 'lower',
  },
  {
    label: 'process CPU with the leases held',
    read: (r, id) => {
      const c = r.scenarios.scale?.contenders[id];
      return c && { value: c.held.processCpuPercent, rounds: [] };
    },
    format: (v) => `${fmtNum(v, 1)} %`,
    better: 'lower',
  },
  {
    label: 'heap per waiter',
    read: (r, id) => {
      const c = r.scenarios.scale?.contenders[id];
      return c && { value: c.waiters.heapPerWaiter, rounds: [] };
    },
    format: fmtBytes,
    better: 'lower',
  },
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
  return table(
    [
      'figure',
      'driver',
      `before: \`${commit}\``,
      `after: \`${results.machine.commit}\``,
      'change (+ is better)',
    ],
    rows,
    ['l', 'l', 'r', 'r', 'r'],
  );
}
