/**
 * The values of the command line's flags that are not names or URLs: durations (`--ttl 2d`,
 * `--timeout 1h`, `--grace inf`), `--limit`, and how a duration reads back in messages.
 */
import { MAX_LIST_LIMIT } from '../options/inspect.ts';
import { CliError } from './exit.ts';

/** What a duration flag looks like, for messages and help. */
export const DURATION_EXAMPLES = '500, 500ms, 10s, 2m, 1h or 2d';

/** A duration flag's units, in ms. */
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The range a duration flag accepts. */
export interface DurationRange {
  /** Least accepted, in ms. @default 0 */
  min?: number;
  /** Most accepted, in ms. @default no bound */
  max?: number;
  /** Whether `inf` (or `Infinity`) is accepted: wait forever, never escalate. @default false */
  infinite?: boolean;
}

/**
 * Parses a duration flag: a non-negative number of milliseconds, with an optional `ms`, `s`,
 * `m`, `h` or `d` suffix (`1.5h` too), or `inf` where `range.infinite`. Anything else, or a value
 * outside the range, is a usage error that names the flag and what it accepts.
 */
export function duration(
  value: string | undefined,
  option: string,
  fallback: number,
  range: DurationRange = {},
): number {
  if (value === undefined) return fallback;
  const { min = 0, max = Number.POSITIVE_INFINITY, infinite = false } = range;
  const flag = `--${option}`;
  if (value === 'Infinity' || value === 'inf') {
    if (infinite) return Number.POSITIVE_INFINITY;
    throw new CliError(`${flag} must be a finite duration ${rangeText(min, max)}; got ${value}`);
  }
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value);
  if (match === null) {
    throw new CliError(
      `${flag} must be a duration like ${DURATION_EXAMPLES}${infinite ? ', or inf' : ''}; got ${cut(value)}`,
    );
  }
  // To the microsecond: 0.1h is 360000 ms, not 360000.00000000006 (a TTL is rounded up).
  const ms = Math.round(Number(match[1]) * (UNITS[match[2] ?? 'ms'] ?? 1) * 1_000) / 1_000;
  if (!Number.isFinite(ms)) {
    throw new CliError(
      `${flag} is too large${infinite ? ' (inf waits forever)' : `; it must be ${rangeText(min, max)}`}; got ${cut(value)}`,
    );
  }
  if (ms < min || ms > max)
    throw new CliError(`${flag} must be a duration ${rangeText(min, max)}; got ${cut(value)}`);
  return ms;
}

const cut = (value: string): string => (value.length > 40 ? `${value.slice(0, 40)}…` : value);

function rangeText(min: number, max: number): string {
  const bound = (ms: number) => (ms >= 60_000 ? `${ms} ms (${formatMs(ms)})` : `${ms} ms`);
  return max === Number.POSITIVE_INFINITY ? `at least ${bound(min)}` : `from ${bound(min)} to ${bound(max)}`;
}

/** `--limit` of the live views (top, dashboard): how many names they follow, as `lh.list()` caps it. */
export function followLimit(value: string | undefined): number {
  // Digits only: Number() reads '' as 0, and '0x10' or '1e3' as numbers.
  const limit = value === undefined ? 1_000 : /^\d{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new CliError(`--limit must be an integer from 1 to ${MAX_LIST_LIMIT}; got ${value}`);
  }
  return limit;
}

export function formatMs(ms: number): string {
  if (ms === Number.POSITIVE_INFINITY) return 'forever';
  // Cut, never rounded up into the next unit (rounding showed "60.0 s" and "1 min 60 s").
  if (ms < 1_000) return `${Math.floor(ms)} ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  // Two units, the smaller one cut.
  const two = (big: number, bigName: string, small: number, smallName: string) =>
    `${Math.floor(ms / big)} ${bigName} ${Math.floor((ms % big) / small)} ${smallName}`;
  if (ms < 3_600_000) return two(60_000, 'min', 1_000, 's');
  if (ms < 86_400_000) return two(3_600_000, 'h', 60_000, 'min');
  return two(86_400_000, 'd', 3_600_000, 'h');
}
