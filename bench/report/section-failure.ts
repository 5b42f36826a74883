// Sections 3 and 4 of docs/benchmarks.md: how soon a holder hears that it lost its lock, and how
// long a waiter waits after its holder died.
import type { Results } from '../results.ts';
import type { Chart } from './charts.ts';
import { fmtMs, fmtNum, table } from './format.ts';
import { lossCell } from './headline.ts';
import { chartLink, contenderName, settingsLine } from './section.ts';

/** 3. Loss detection, after a DEL and after a takeover. */
export function lossSection(results: Results, charts: Chart[]): string[] {
  const l = results.scenarios.loss;
  if (l === undefined) return [];
  const name = contenderName(results);
  const cap = l.settings['cap'] ?? 0;
  return [
    '## 3. Loss detection',
    '',
    `A holder takes a lock with ttl ${fmtNum(l.settings['ttl'], 0)} ms; at a time spread over 10–90 % of the ` +
      'ttl, another connection deletes the key, or takes the lock over. The delay runs from the moment that ' +
      'command is sent to the moment the holder is told (signal abort or callback). Samples that are not told ' +
      `within ${fmtNum(cap / 1000, 0)} s count as "never". The takeover is leasehold’s \`forceAcquire\`; the ` +
      'peers have no takeover call, so for them another connection overwrites the key with its own value ' +
      '(`SET key other PX ttl`), which is what any other owner’s write looks like.',
    '',
    `Settings: ${settingsLine(l.settings)}.${l.concurrent ? ' Quick run: the contenders of a round ran at the same time.' : ''}`,
    '',
    table(
      ['contender', 'after DEL p50', 'p99', 'after takeover p50', 'p99', 'samples'],
      Object.entries(l.contenders).map(([id, r]) => [
        name(id),
        lossCell(r.del, cap, 'p50'),
        lossCell(r.del, cap),
        lossCell(r.takeover, cap, 'p50'),
        lossCell(r.takeover, cap),
        `${r.del.n + r.del.never} + ${r.takeover.n + r.takeover.never}`,
      ]),
    ),
    chartLink(charts, 'loss.svg'),
  ];
}

/** 4. Crash recovery: what a SIGKILLed holder costs beyond its TTL. */
export function crashSection(results: Results, charts: Chart[]): string[] {
  const c = results.scenarios.crash;
  if (c === undefined) return [];
  const name = contenderName(results);
  return [
    '## 4. Crash recovery',
    '',
    `A holder process takes ${c.settings['samples']} locks (ttl ${fmtNum(c.settings['ttl'], 0)} ms) a little apart; a ` +
      'second process waits for all of them; the holder is SIGKILLed. Each key’s expiry is read with `PTTL` ' +
      'right after the kill. The figure is the waiter’s acquire time minus that expiry: what the crash costs ' +
      'beyond the TTL the holder had left. `early` counts acquisitions more than 1 ms before the expiry ' +
      '(should be 0).',
    '',
    `Settings: ${settingsLine(c.settings)}.${c.concurrent ? ' Quick run: the contenders of a round ran at the same time.' : ''}`,
    '',
    table(
      ['contender', 'beyond TTL p50', 'p99', 'max', 'TTL left at kill p50', 'samples', 'early'],
      Object.entries(c.contenders).map(([id, r]) => [
        name(id),
        `${fmtMs(r.excess.p50)} ms`,
        `${fmtMs(r.excess.p99)} ms`,
        `${fmtMs(r.excess.max)} ms`,
        `${fmtMs(r.remaining.p50)} ms`,
        fmtNum(r.excess.n, 0),
        fmtNum(r.early, 0),
      ]),
    ),
    chartLink(charts, 'crash.svg'),
  ];
}
