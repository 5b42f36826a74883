import type { Summary } from '../lib/stats.ts';
import type { Results, Scenarios } from '../results.ts';
import type { LossStats } from '../scenarios/loss.ts';
import { heldFor } from '../scenarios/scale.ts';
import { fmtBytes, fmtMs, fmtNum, table } from './format.ts';

/** A loss-detection cell: p99, or how many samples never heard within the cap. */
export function lossCell(stats: LossStats | undefined, cap: number, stat: 'p50' | 'p99' = 'p99'): string {
  if (stats === undefined) return '–';
  const total = stats.n + stats.never;
  if (total === 0) return '–';
  if (stats.never === total) return `never (${cap / 1000} s cap)`;
  const value = `${fmtMs(stats[stat])} ms`;
  return stats.never > 0 ? `${value}; ${stats.never}/${total} never` : value;
}

const gapCell = (h: { gap: Summary } | undefined) =>
  h === undefined ? '–' : `${fmtMs(h.gap.p50)} / ${fmtMs(h.gap.p99)} ms`;

/** Handoff gap, loss detected, crash recovery, idle load: the headline's cells that section 8 repeats. */
export function notifiedCells(s: Pick<Scenarios, 'handoff' | 'loss' | 'crash' | 'idle'>, id: string) {
  const [loss, crash, idle] = [s.loss?.contenders[id], s.crash?.contenders[id], s.idle?.contenders[id]];
  const cap = s.loss?.settings['cap'] ?? 0;
  return [
    gapCell(s.handoff?.contenders[id]),
    loss === undefined ? '–' : `${lossCell(loss.del, cap)} / ${lossCell(loss.takeover, cap)}`,
    crash === undefined ? '–' : `${fmtMs(crash.excess.p50)} ms`,
    idle === undefined ? '–' : fmtNum(idle.commandsPerSecond),
  ];
}

/**
 * The primitives other than the mutex that the handoff sections time: a semaphore of limit 1, a
 * fair lock, a write lease (bench/contenders/leasehold.ts, redis-semaphore.ts).
 */
const OTHER_PRIMITIVE =
  /^(leasehold-(baseline-)?(node-redis|ioredis)-(semaphore|fair|write)|redis-semaphore-semaphore(-tuned)?)$/;

/** The short table for the README: one row per contender, the numbers users choose by. */
export function headline(results: Results): string {
  const s = results.scenarios;
  // The peers' longer poll intervals belong to section 2b's chart, not the headline, and the
  // other primitives to sections 2 and 2b: the headline compares mutexes. A baseline build is
  // compared with this tree in its own section ("This tree against ..."), not shown to users.
  const rows = results.contenders
    .filter((c) => !/-poll-\d+ms$/.test(c.id) && !OTHER_PRIMITIVE.test(c.id) && !c.id.includes('-baseline-'))
    .map((c) => {
      if (c.unavailable !== undefined)
        return [c.label, `not run: ${c.unavailable}`, '', '', '', '', '', '', ''];
      const [handoff, ...others] = notifiedCells(s, c.id);
      const un = s.uncontended?.contenders[c.id];
      return [
        c.label,
        handoff!,
        gapCell(s.idleHandoff?.contenders[c.id]),
        ...others,
        un === undefined ? '–' : fmtNum(un.parallel.opsPerSecond),
        un === undefined ? '–' : fmtNum(un.sequential.opsPerSecond),
        fmtBytes(heldFor(s.scale, c.id)?.heapPerLease),
      ];
    });
  const workers = s.handoff?.settings['workers'] ?? 4;
  const waiters = s.idle?.settings['waiters'] ?? 50;
  const inFlight = s.uncontended?.settings['inFlight'] ?? 64;
  const idleHold = `${s.idleHandoff?.settings['hold'] ?? 150}-${s.idleHandoff?.settings['holdMax'] ?? 250}`;
  return table(
    [
      'library',
      `handoff gap p50 / p99 (${workers} processes, 1 ms holds)`,
      `handoff to idle waiters p50 / p99 (${idleHold} ms holds)`,
      'loss detected p99 (DEL / takeover)',
      'crash: wait beyond TTL p50',
      `idle Redis commands/s (${waiters} waiters)`,
      `acquire+release/s (${inFlight} in flight)`,
      'acquire+release/s (1 in flight)',
      'heap per held lease',
    ],
    rows,
  );
}
