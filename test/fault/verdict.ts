import type { RunResult, Scenario } from './types.ts';

/**
 * Signal lag bound the checks hold every lapse to. Measured lags are far lower (docs/safety.md
 * reports them); the bound is loose because the test machine is shared and timers run late under load.
 */
export const LAG_BOUND = 1_000;

/**
 * How far past `commandTimeout` a release may settle, and close() past it, while Redis does not
 * answer (docs/safety.md, "When Redis does not answer", states the bound this checks): timers
 * on a loaded 2-core machine, and close()'s own steps (the drivers' grace periods).
 */
export const SETTLE_SLACK = 500;
export const CLOSE_SLACK = 4_000;

/** What a run broke, given what its scenario allows: empty means it passed. */
export function violations(result: RunResult, scenario: Scenario, lagBound = LAG_BOUND): string[] {
  const out: string[] = [];
  if (result.staleAccepted > 0) out.push(`${result.staleAccepted} stale write(s) accepted`);
  if (result.overlaps.length > 0 && scenario.mayOverlap === undefined) {
    const worst = Math.max(...result.overlaps.map((o) => o.ms));
    out.push(
      `${result.overlaps.length} overlapping critical section(s), longest ${worst.toFixed(1)} ms: ` +
        result.overlaps.map((o) => `${o.ms.toFixed(1)} ms, ${o.cause}`).join('; '),
    );
  }
  if (result.fenceRegressions > 0 && scenario.mayRegress === undefined) {
    out.push(`${result.fenceRegressions} fencing token(s) not above every earlier one`);
  }
  if (result.worstLag > lagBound) out.push(`signal lag ${result.worstLag.toFixed(1)} ms > ${lagBound} ms`);
  if (result.criticalSections === 0) out.push('no critical section ran');
  const limit = scenario.commandTimeout?.(result.ttl);
  if (limit !== undefined) {
    if (result.unsettledReleases > 0) out.push(`${result.unsettledReleases} release(s) never settled`);
    if (result.worstRelease > limit + SETTLE_SLACK) {
      out.push(
        `a release took ${result.worstRelease.toFixed(0)} ms > commandTimeout ${limit} + ${SETTLE_SLACK} ms`,
      );
    }
    if (result.worstClose > limit + CLOSE_SLACK) {
      out.push(
        `close() took ${result.worstClose.toFixed(0)} ms > commandTimeout ${limit} + ${CLOSE_SLACK} ms`,
      );
    }
  }
  const free = scenario.freeAfterHeal?.(result.ttl);
  if (free !== undefined) {
    for (const gap of result.healGaps) {
      if (gap > free) out.push(`the lock was free again ${gap.toFixed(0)} ms after a heal > ${free} ms`);
    }
  }
  // The same error from several workers or rounds is reported once, with a count.
  const counts = new Map<string, number>();
  for (const error of result.errors) {
    const key = error.replace(/^w\d+: /, '');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  for (const [error, count] of counts) out.push(`error${count > 1 ? ` (x${count})` : ''}: ${error}`);
  return out;
}
