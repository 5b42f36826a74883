import type { RunResult, Scenario } from './engine.ts';

/**
 * Signal lag bound the checks hold every lapse to. Measured lags are far lower (docs/safety.md
 * reports them); the bound is loose because the test machine is shared and timers run late under load.
 */
export const LAG_BOUND = 1_000;

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
  // The same error from several workers or rounds is reported once, with a count.
  const counts = new Map<string, number>();
  for (const error of result.errors) {
    const key = error.replace(/^w\d+: /, '');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  for (const [error, count] of counts) out.push(`error${count > 1 ? ` (x${count})` : ''}: ${error}`);
  return out;
}
