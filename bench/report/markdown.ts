// docs/benchmarks.md as a whole: the introduction, summary, targets, machine, contenders and
// method, then each scenario's section (section-*.ts), the run's failures and how to read it all.
import type { Results } from '../results.ts';
import type { Chart } from './charts.ts';
import { fmtNum, table } from './format.ts';
import { headline } from './headline.ts';
import { progress } from './progress.ts';
import { contenderName } from './section.ts';
import { crashSection, lossSection } from './section-failure.ts';
import { floorSection } from './section-floor.ts';
import { idleSection, scaleSection } from './section-load.ts';
import { handoffSection, idleHandoffSection, uncontendedSection } from './section-speed.ts';
import { targets } from './targets.ts';
import { versus } from './versus.ts';

/** The scenario sections, in the page's order; each is empty when its scenario did not run. */
const SECTIONS = [
  uncontendedSection,
  handoffSection,
  idleHandoffSection,
  lossSection,
  crashSection,
  idleSection,
  scaleSection,
  floorSection,
];

function contendersSection(results: Results): string {
  const rows = results.contenders.map((c) => [
    c.label,
    `${c.library} ${c.version}`,
    `${c.client} ${c.clientVersion}`,
    `\`${c.api}\``,
    c.lossSignal,
    c.waiting,
    Object.entries(c.settings)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join('; '),
    c.unavailable ?? '',
  ]);
  return table(
    ['contender', 'library', 'client', 'API used', 'loss reported by', 'waiting', 'settings', 'not run'],
    rows,
    ['l', 'l', 'l', 'l', 'l', 'l', 'l', 'l'],
  );
}

/** docs/benchmarks.md: every number comes from `results`; nothing here is typed in by hand. */
export function markdown(results: Results, charts: Chart[], baseline?: Results): string {
  const m = results.machine;
  const name = contenderName(results);
  const out: string[] = [];
  out.push(
    '# Benchmarks',
    '',
    `<!-- Written by \`${results.command}\` (bench/index.ts). Do not edit: rerun the benchmark. -->`,
    '',
    `Measured ${m.date.slice(0, 10)} (${results.mode} run, ${fmtNum(results.durationSeconds / 60, 1)} min) at commit ` +
      `\`${m.commit}\`; raw numbers in [bench/results/latest.json](../bench/results/latest.json). ` +
      'Every contender runs against the same redis-server in the same run, interleaved round by round, so that ' +
      'machine noise hits all of them alike. Reproduce with `npm run bench`; `npm run bench -- --quick` ' +
      'runs the same scenarios with smaller samples in about a minute and leaves this page alone; ' +
      '`npm run bench -- --baseline=<commit>` also builds leasehold as it was at that commit and measures ' +
      'it next to this tree in the same run (contenders `leasehold-baseline-*`, labelled ' +
      '“leasehold @ <commit>”), then prints a before/after table (`npm run bench -- --help`).',
    '',
    '## Summary',
    '',
    headline(results),
    '',
    ...(results.baseline === undefined || versus(results) === ''
      ? []
      : [
          `## This tree against \`${results.baseline.commit}\` (same run)`,
          '',
          `Baseline: ${results.baseline.note}. Round medians, with the range of the rounds in brackets.`,
          '',
          versus(results),
          '',
        ]),
    'Handoff: gap from a release in one process to the next acquire in another. Loss: from an external ' +
      '`DEL` of the lock key, or a takeover, to the holder being told. Crash: how long a waiter waits beyond ' +
      'the expiry of a SIGKILLed holder’s key. Idle: Redis commands/s while waiters wait on a held lock.',
    '',
    '## Targets',
    '',
    targets(results),
    '',
    progress(results, baseline),
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['CPU', `${m.cpuModel} × ${m.cpus}`],
        ['memory', `${m.memoryGiB} GiB (${m.freeMemoryGiB} GiB free at start)`],
        ['OS', m.os],
        ['Node.js', m.node],
        ['Redis', m.redisServer],
        [
          'load average (1, 5, 15 min)',
          `${m.loadAverage.join(', ')} at start; ${results.loadAverageAtEnd.join(', ')} at end`,
        ],
      ],
      ['l', 'l'],
    ),
    '',
    'Each scenario starts its own `redis-server` (default settings, no persistence) on a free loopback port; ' +
      'clients, workers and Redis share the machine.',
    '',
    '## Contenders',
    '',
    'Each library is used the way its README recommends, with its default settings; the table lists the ' +
      'effective values, read back from the library where it exposes them. Every scenario passes the same ' +
      '`ttl` to all contenders. Where a library’s acquire gives up after its own retry budget, the benchmark ' +
      'calls it again, which is what a caller that must get the lock does.',
    '',
    contendersSection(results),
    '',
    '## Method',
    '',
    '- Rounds: contenders run one after another inside each round, in an order rotated every round; a ' +
      'scenario reports the median over rounds of each round’s figure (p50, p99, rate). Loss detection ' +
      'and crash recovery have few samples per round, so their percentiles are over all samples pooled.',
    '- Timestamps that cross processes are `performance.timeOrigin + performance.now()`; the handoff ' +
      'scenario measures each worker’s clock offset over IPC and reports it.',
    '- Redis load comes from `INFO` deltas: `total_commands_processed` counts a script call *and* every ' +
      'command the script runs, `total_reads_processed` counts socket reads (at least one per round trip).',
    '- Percentiles are linear-interpolated; with n samples, p99 of fewer than 100 samples is close to the maximum.',
    '',
  );

  for (const section of SECTIONS) out.push(...section(results, charts));

  const errors = Object.entries(results.errors);
  const failures = Object.entries(results.failures ?? {}).flatMap(([scenario, byContender]) =>
    Object.entries(byContender).map(
      ([id, error]) => `- **${scenario}**, ${name(id)}: \`${error.split('\n')[0]}\``,
    ),
  );
  if (errors.length > 0 || failures.length > 0) {
    out.push('## Failures in this run', '');
    for (const [id, error] of errors)
      out.push(`- **${id}** (whole scenario): \`${(error ?? '').split('\n')[0]}\``);
    out.push(...failures, '');
  }
  const engines = results.contenders
    .filter((c) => typeof c.settings['engines'] === 'string')
    .map(
      (c) =>
        `- ${c.label}: ${String(c.settings['engines'])}${c.unavailable === undefined ? '; every scenario above ran it.' : ''}`,
    );
  out.push(
    '## Reading these numbers',
    '',
    ...engines,
    '- One small machine runs Redis, the clients and the workers at once; absolute figures move with its ' +
      'load (see the load average above). Ratios between contenders in the same run are the robust part.',
    '- The peers learn of a lost lock only when their next extension fails, so their detection delay scales ' +
      'with the ttl; with their default ttls (redis-semaphore 10 s, redlock-universal 30 s) it is seconds to tens of seconds.',
    '- Polling peers trade idle load against handoff latency through their retry interval; leasehold ' +
      'waits on invalidation pushes and a timer at the holder’s remaining TTL instead.',
    '',
  );
  return out.join('\n');
}
