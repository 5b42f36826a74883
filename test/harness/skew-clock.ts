// A skewed clock for one process, loaded before anything else with
// `node --import tsx --import ./test/harness/skew-clock.ts worker.ts` (Worker's `execArgv`).
// leasehold reads time only through src/engine/clock.ts (performance.now) and Date.now (lease.expiresAt),
// so patching those two is "skewing the clock where the library reads time", without touching src/.
//
//   LEASEHOLD_SKEW_RATE    how fast the skewed clock runs: 0.5 = half speed, 2 = double. @default 1
//   LEASEHOLD_SKEW_OFFSET  a constant jump in ms added to both clocks. @default 0
//
// The true clock stays reachable through `realNow()` below (epoch ms), for measurements.
import { performance } from 'node:perf_hooks';

const REAL = Symbol.for('leasehold.test.realNow');

/** Parses the skew settings from the environment; throws on nonsense so a scenario cannot lie. */
export function skewFromEnv(env: NodeJS.ProcessEnv = process.env): { rate: number; offset: number } {
  const rate = Number(env['LEASEHOLD_SKEW_RATE'] ?? '1');
  const offset = Number(env['LEASEHOLD_SKEW_OFFSET'] ?? '0');
  if (!Number.isFinite(rate) || rate <= 0) throw new TypeError(`bad LEASEHOLD_SKEW_RATE: ${rate}`);
  if (!Number.isFinite(offset)) throw new TypeError(`bad LEASEHOLD_SKEW_OFFSET: ${offset}`);
  return { rate, offset };
}

/** True epoch ms with sub-ms precision, also in a process whose clocks are skewed. */
export function realNow(): number {
  const saved = (globalThis as Record<symbol, unknown>)[REAL];
  return typeof saved === 'function' ? (saved as () => number)() : performance.timeOrigin + performance.now();
}

/** Installs the skew (once per process). Exported for unit tests; the import below runs it. */
export function installSkew(rate: number, offset: number): void {
  const g = globalThis as Record<symbol, unknown>;
  if (g[REAL] !== undefined) return;
  const perfNow = performance.now.bind(performance);
  const dateNow = Date.now;
  const origin = performance.timeOrigin;
  g[REAL] = () => origin + perfNow();
  // Skew counts from installation, so the process starts at the true time (plus the offset).
  const perfBase = perfNow();
  const dateBase = dateNow();
  performance.now = () => perfBase + (perfNow() - perfBase) * rate + offset;
  Date.now = () => Math.floor(dateBase + (dateNow() - dateBase) * rate + offset);
}

if (process.env['LEASEHOLD_SKEW_RATE'] !== undefined || process.env['LEASEHOLD_SKEW_OFFSET'] !== undefined) {
  const { rate, offset } = skewFromEnv();
  installSkew(rate, offset);
}
