// docs/benchmarks.md as a whole: the introduction, summary, targets, machine, contenders and
// method, then each scenario's section (section-*.ts), the run's failures and how to read it all.
// Dated history lives in docs/benchmarks-history.md, written by hand.
import type { Results } from '../results.ts';
import { fmtNum, table } from './format.ts';
import { headline } from './headline.ts';
import { type Chart, contenderName } from './section.ts';
import { crashSection, failoverSection, lossSection } from './section-failure.ts';
import { idleSection, scaleSection } from './section-load.ts';
import { handoffSection, idleHandoffSection, uncontendedSection } from './section-speed.ts';
import { clusterSection, postgresSection, serversSection } from './section-topology.ts';
import { targets } from './targets.ts';
import { versus } from './versus.ts';

/** The scenario sections, in the page's order; each is empty when its scenario did not run. */
const SECTIONS = [
  uncontendedSection,
  handoffSection,
  idleHandoffSection,
  lossSection,
  crashSection,
  failoverSection,
  idleSection,
  scaleSection,
  clusterSection,
  serversSection,
  postgresSection,
];

/**
 * docs/benchmarks.md up to its hand-written part (the method scenario by scenario, where the time
 * goes, the budget, how to read it all): every number comes from `results`.
 */
export function markdown(results: Results, charts: Chart[]): string {
  const m = results.machine;
  const name = contenderName(results);
  const compared = versus(results);
  const out = [
    '# Benchmarks',
    '',
    `<!-- Written by \`${results.command}\` (bench/index.ts) down to the hand-written part: rerun, do not edit. -->`,
    '',
    `Measured ${m.date.slice(0, 10)} (${results.mode} run, ${fmtNum(results.durationSeconds / 60, 1)} min) at commit ` +
      `\`${m.commit}\`; raw numbers in [bench/results/latest.json](../bench/results/latest.json). Every contender runs ` +
      'against the same server in the same run, interleaved round by round, so that machine noise hits all of them ' +
      'alike. Reproduce with `npm run bench` (`--help` lists the options); how each scenario measures is under ' +
      '[Method](#method) below, how the figures moved over time in [benchmarks-history.md](benchmarks-history.md).',
    '',
    '## Summary',
    '',
    headline(results),
    '',
    ...(compared === ''
      ? []
      : [`## This tree against \`${results.baseline?.commit}\` (same run)`, '', compared, '']),
    '## Targets',
    '',
    targets(results),
    '',
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
    '## Contenders',
    '',
    table(
      'contender | library | client | API used | loss reported by | waiting | settings | not run',
      results.contenders.map((c) => [
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
      ]),
      Array(8).fill('l'),
    ),
    '',
  ];
  for (const section of SECTIONS) out.push(...section(results, charts));
  const failures = [
    ...Object.entries(results.errors).map(
      ([id, error]) => `- **${id}** (whole scenario): \`${error?.split('\n')[0]}\``,
    ),
    ...Object.entries(results.failures).flatMap(([scenario, byContender]) =>
      Object.entries(byContender).map(
        ([id, error]) => `- **${scenario}**, ${name(id)}: \`${error.split('\n')[0]}\``,
      ),
    ),
  ];
  if (failures.length > 0) out.push('## Failures in this run', '', ...failures, '');
  return out.join('\n');
}
