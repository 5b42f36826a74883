import type { Results } from '../results.ts';
import { fmtBytes, fmtMs, fmtNum, table } from './format.ts';

/**
 * "Before and after": leasehold's headline figures in a saved earlier run (the baseline,
 * bench/results/baseline.json) next to this run's, so that a design change is reported with the
 * numbers it moved. Both columns come from result files; nothing is typed in by hand.
 */

interface Metric {
  label: string;
  /** The figure, or undefined when the run did not measure it. */
  read(results: Results, id: string): number | undefined;
  format(value: number): string;
  /** Which direction is better. */
  better: 'lower' | 'higher';
}

const metrics: Metric[] = [
  {
    label: 'handoff gap p50',
    read: (r, id) => r.scenarios.handoff?.contenders[id]?.gap.p50,
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'handoff gap p99',
    read: (r, id) => r.scenarios.handoff?.contenders[id]?.gap.p99,
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'loss detected after DEL, p99',
    read: (r, id) => r.scenarios.loss?.contenders[id]?.del.p99,
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'crash: wait beyond TTL, p50',
    read: (r, id) => r.scenarios.crash?.contenders[id]?.excess.p50,
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'uncontended acquire+release, 1 in flight, p50',
    read: (r, id) => r.scenarios.uncontended?.contenders[id]?.sequential.p50,
    format: (v) => `${fmtMs(v)} ms`,
    better: 'lower',
  },
  {
    label: 'uncontended acquire+release/s, 64 in flight',
    read: (r, id) => r.scenarios.uncontended?.contenders[id]?.parallel.opsPerSecond,
    format: (v) => `${fmtNum(v)}/s`,
    better: 'higher',
  },
  {
    label: 'heap per held lease (10,000 held)',
    read: (r, id) => r.scenarios.scale?.contenders[id]?.held.heapPerLease,
    format: (v) => fmtBytes(v),
    better: 'lower',
  },
];

/** The best peer's figure for `metric` in `results`, to show the ratio each run reached. */
function bestPeer(results: Results, metric: Metric): number | undefined {
  const values = results.contenders
    .filter((c) => c.library !== 'leasehold' && c.unavailable === undefined)
    .map((c) => metric.read(results, c.id))
    .filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (values.length === 0) return undefined;
  return metric.better === 'lower' ? Math.min(...values) : Math.max(...values);
}

/** A cell: the figure, then the same run's best peer for comparison. */
function cell(value: number, peer: number | undefined, metric: Metric): string {
  return peer === undefined
    ? metric.format(value)
    : `${metric.format(value)} (best peer ${metric.format(peer)})`;
}

/** Why a target is still missed, for each one this run misses (none listed when all are met). */
function shortfalls(results: Results): string[] {
  const s = results.scenarios;
  const ours = results.contenders.filter((c) => c.library === 'leasehold' && c.unavailable === undefined);
  const peers = results.contenders.filter((c) => c.library !== 'leasehold' && c.unavailable === undefined);
  const any = (test: (id: string) => boolean) => ours.some((c) => test(c.id));
  const bestHandoff = Math.min(
    ...peers.map((p) => s.handoff?.contenders[p.id]?.gap.p50 ?? Number.POSITIVE_INFINITY),
  );
  const floor = s.floor?.bareHandoff?.p50;
  const out: string[] = [];
  if (
    any(
      (id) =>
        (s.handoff?.contenders[id]?.gap.p50 ?? 0) > 0.15 ||
        bestHandoff / (s.handoff?.contenders[id]?.gap.p50 ?? 1) < 20,
    )
  ) {
    out.push(
      '- **Handoff p50 ≤ 0.15 ms and 20× the best peer.** ' +
        (floor === undefined
          ? ''
          : `The floor in this run (a bare socket push plus one round trip: no Redis client, no Lua) has ` +
            `p50 ${fmtMs(floor)} ms, which leaves ${fmtMs(Math.max(0, 0.15 - floor))} ms for a Redis client, ` +
            'a Lua script and two turns of the event loop: no client library comes near that here. ') +
        (s.handoff?.grantFloor === undefined
          ? ''
          : 'Since issue 27 a release grants the lock to one registered waiter and publishes it ' +
            '([direct grants](direct-grants.md)); the direct-grant floor in the same processes (section 2, ' +
            `bare sockets, no client library) has p50 ${fmtMs(s.handoff.grantFloor.gap.p50)} ms. `) +
        'What remains above it: the other waiting processes still hear the grant’s invalidation push (they ' +
        'track the lock key so as to hear of a lock freed any other way) and each sends one attempt that ' +
        'fails, on the same two cores as the grantee; and the Redis client’s parse and promise hops in the ' +
        'grantee. A peer polling every millisecond keeps every process awake and pays for it in idle load ' +
        '(section 5).',
    );
  }
  if (any((id) => (s.handoff?.contenders[id]?.gap.p99 ?? 0) > 1)) {
    out.push(
      '- **Handoff p99 ≤ 1 ms.** Four Node processes, the benchmark driver and redis-server share the ' +
        'machine’s cores: the tail is CPU scheduling, and it shrinks with idle cores.',
    );
  }
  if (any((id) => (s.crash?.contenders[id]?.excess.p50 ?? 0) > 2)) {
    out.push(
      '- **Crash recovery ≤ 2 ms.** The waiter retries from a millisecond before the expiry at one round ' +
        'trip per attempt, so what remains is scheduling on a busy machine and the benchmark’s own ' +
        'estimate of the expiry (a PTTL in whole milliseconds, read once after the kill): per-round medians ' +
        'vary by about a millisecond around the target.',
    );
  }
  const un = s.uncontended;
  if (un !== undefined) {
    const short = ours.filter((c) => {
      const same = peers.filter((p) => p.client === c.client);
      const best = Math.max(0, ...same.map((p) => un.contenders[p.id]?.parallel.opsPerSecond ?? 0));
      return (un.contenders[c.id]?.parallel.opsPerSecond ?? 0) < best;
    });
    if (short.length > 0) {
      out.push(
        '- **Uncontended throughput ≥ the best peer on the same client.** A peer that acquires with a plain ' +
          '`SET NX` runs no Lua; leasehold’s acquire is a script that also advances the fencing token, and a ' +
          'script call costs Redis several times what a plain `SET` does (`INFO commandstats`). With 64 ' +
          'acquisitions in flight the gap splits into Redis time (the script and tracking), client time ' +
          '(the library on top of the client) and how much the two overlap: `npm run bench:breakdown` ' +
          'measures each, and "Where the time goes" below reads it.',
      );
    }
  }
  if (out.length === 0) return ['Every target of issue 3 is met in this run.', ''];
  return ['Where leasehold is still short of a target in this run, and why:', '', ...out, ''];
}

/** The section, or an empty string when there is no baseline. */
export function progress(results: Results, baseline: Results | undefined): string {
  if (baseline === undefined) return '';
  const rows: string[][] = [];
  for (const c of results.contenders.filter(
    (x) => x.library === 'leasehold' && x.unavailable === undefined,
  )) {
    for (const metric of metrics) {
      const before = metric.read(baseline, c.id);
      const after = metric.read(results, c.id);
      if (before === undefined || after === undefined) continue;
      rows.push([
        c.label,
        metric.label,
        cell(before, bestPeer(baseline, metric), metric),
        cell(after, bestPeer(results, metric), metric),
      ]);
    }
  }
  if (rows.length === 0) return '';
  return [
    '## Before and after',
    '',
    `The baseline is the full run of ${baseline.machine.date.slice(0, 10)} at commit \`${baseline.machine.commit}\` ` +
      '([bench/results/baseline.json](../bench/results/baseline.json)), before the changes listed below; ' +
      'each cell also compares with the best peer of the same run, so machine noise between the two runs ' +
      'does not pass for progress.',
    '',
    table(['contender', 'figure', 'baseline', 'this run'], rows, ['l', 'l', 'r', 'r']),
    '',
    'What changed between the two runs:',
    '',
    '- **Uncontended fast path.** An acquire with nobody waiting for the same name in this process makes ' +
      'its first attempt directly, without building a wait queue and its notification watch; only a busy ' +
      'lock puts the caller in a queue (with the attempt’s verdict, so no extra round trip unless a ' +
      'change was pushed meanwhile).',
    '- **No per-command timers, no per-call pipelines.** node-redis 6 arms an `AbortSignal.timeout` for ' +
      'every command by default; leasehold bounds its own waits (acquire timeouts, lease validity, a grace ' +
      'period in `close()`) and turns that off. On ioredis a single release or extension is a plain command ' +
      'instead of a `Pipeline` object.',
    '- **Writes of 8.** Both drivers send the commands of one turn of the event loop in writes of at most ' +
      '8 (ioredis: its socket corked per turn, src/driver/tick-writes.ts; node-redis: handed 8 commands ' +
      'per write, src/driver/paced-sends.ts), so that Redis works on the first ones while the process ' +
      'issues the rest; one write per command cost a system call each on both sides, one write per turn ' +
      'left Redis idle while the process issued it (“Writes per turn” below).',
    '- **Leaner leases.** A held lease is one bookkeeping object that is also its push listener: no ' +
      'closures, arrays or Sets per lease; a release makes its `LockReleasedError` only when a signal ' +
      'exists or someone asks for it.',
    '- **Crash recovery.** A waiter aims its retry timer a millisecond before the holder’s remaining PTTL ' +
      'runs out (Node’s timers fire up to a millisecond late); a key expiring within the millisecond is ' +
      'retried on the next turns of the event loop, a few round trips at most, instead of after a 1 ms timer.',
    '',
    ...shortfalls(results),
  ].join('\n');
}
