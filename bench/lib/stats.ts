/** Summary of one set of samples (milliseconds unless the caller says otherwise). */
export interface Summary {
  n: number;
  p50: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/** Linear-interpolated percentile of an ascending array; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const a = sorted[low]!;
  const b = sorted[high]!;
  return a + (b - a) * (rank - low);
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((acc, x) => acc + x, 0);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
  };
}

/** Median of per-round values; NaN values (a round that produced nothing) are skipped. */
export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  return percentile(finite, 50);
}

/** Median, field by field, of per-round summaries. */
export function medianSummary(rounds: readonly Summary[]): Summary {
  return {
    n: rounds.reduce((acc, r) => acc + r.n, 0),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    min: Math.min(...rounds.map((r) => r.min)),
    max: Math.max(...rounds.map((r) => r.max)),
    mean: median(rounds.map((r) => r.mean)),
  };
}

/** Wall-clock timestamp in ms that agrees across processes on one machine (sub-ms resolution). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}
