import type { Results } from '../results.ts';
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

/**
 * The primitives other than the mutex that the handoff sections time (bench/contenders/
 * semaphores.ts): a semaphore of limit 1, a fair lock, a write lease.
 */
const OTHER_PRIMITIVE =
  /^(leasehold-(baseline-)?(node-redis|ioredis)-(semaphore|fair|write)|redis-semaphore-semaphore(-tuned)?)$/;

/** The short table for the README: one row per contender, the numbers users choose by. */
export function headline(results: Results): string {
  const s = results.scenarios;
  // The peers' longer poll intervals belong to section 2b's chart, not the headline, and the
  // other primitives to sections 2 and 2b: the headline compares mutexes.
  const rows = results.contenders
    .filter((c) => !/-poll-\d+ms$/.test(c.id) && !OTHER_PRIMITIVE.test(c.id))
    .map((c) => {
      if (c.unavailable !== undefined)
        return [c.label, `not run: ${c.unavailable}`, '', '', '', '', '', '', ''];
      const h = s.handoff?.contenders[c.id];
      const idleTurns = s.idleHandoff?.contenders[c.id];
      const loss = s.loss?.contenders[c.id];
      const cap = s.loss?.settings['cap'] ?? 0;
      const crash = s.crash?.contenders[c.id];
      const idle = s.idle?.contenders[c.id];
      const un = s.uncontended?.contenders[c.id];
      const held = heldFor(s.scale, c.id);
      return [
        c.label,
        h === undefined ? '–' : `${fmtMs(h.gap.p50)} / ${fmtMs(h.gap.p99)} ms`,
        idleTurns === undefined ? '–' : `${fmtMs(idleTurns.gap.p50)} / ${fmtMs(idleTurns.gap.p99)} ms`,
        loss === undefined ? '–' : `${lossCell(loss.del, cap)} / ${lossCell(loss.takeover, cap)}`,
        crash === undefined ? '–' : `${fmtMs(crash.excess.p50)} ms`,
        idle === undefined ? '–' : fmtNum(idle.commandsPerSecond),
        un === undefined ? '–' : fmtNum(un.parallel.opsPerSecond),
        un === undefined ? '–' : fmtNum(un.sequential.opsPerSecond),
        fmtBytes(held?.heapPerLease),
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
