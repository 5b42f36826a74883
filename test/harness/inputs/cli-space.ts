/**
 * The command line's duration flags as docs/cli.md describes them: a non-negative number of
 * milliseconds, with an optional unit (ms, s, m, h, d), fractions allowed; `inf` where the flag
 * takes it (--timeout, --grace). Each drawn value comes with what it should mean.
 */
import fc from 'fast-check';
import { MAX_TTL, MIN_TTL } from './space.ts';

const UNITS: Record<string, number> = { '': 1, ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A flag value, and the milliseconds it means by the documented grammar (undefined: not a duration). */
export interface DurationText {
  text: string;
  ms: number | undefined;
}

/** Written the documented way: digits, maybe a fraction, maybe a unit. */
export const wellFormed: fc.Arbitrary<DurationText> = fc
  .tuple(
    fc.oneof(
      fc.nat({ max: 100 }).map(String),
      fc.nat().map(String),
      fc.tuple(fc.nat({ max: 999 }), fc.integer({ min: 0, max: 999 })).map(([a, b]) => `${a}.${b}`),
      fc.constantFrom('0', '12', '24', '2147483647', '2147483648', '99999999999999999999'),
    ),
    fc.constantFrom('', 'ms', 's', 'm', 'h', 'd'),
  )
  .map(([n, unit]) => ({ text: `${n}${unit}`, ms: Math.round(Number(n) * UNITS[unit]! * 1_000) / 1_000 }));

/** Not a duration: signs, exponents, spaces, other units, other digits. */
export const malformed: fc.Arbitrary<DurationText> = fc
  .oneof(
    fc.constantFrom(
      '',
      '-5',
      '+5',
      '1e9',
      '5 s',
      ' 5',
      '5S',
      '5H',
      '5sec',
      '5min',
      '1.',
      '.5',
      '0x10',
      'NaN',
    ),
    fc.constantFrom('5ms5', '１０', '١٠', '5µs', '1h30m', 'infinity', 'INF', '-inf', '∞'),
    fc.string({ maxLength: 6 }).filter((s) => !/^(\d+(\.\d+)?(ms|s|m|h|d)?|inf|Infinity)$/.test(s)),
  )
  .map((text) => ({ text, ms: undefined }));

export const infinite: fc.Arbitrary<DurationText> = fc
  .constantFrom('inf', 'Infinity')
  .map((text) => ({ text, ms: Number.POSITIVE_INFINITY }));

export const durationText = fc.oneof({ weight: 4, arbitrary: wellFormed }, malformed, infinite);

/** What each duration flag of `leasehold run` accepts. */
export const FLAGS = {
  ttl: { min: MIN_TTL, max: MAX_TTL, infinite: false },
  timeout: { min: 0, max: Number.POSITIVE_INFINITY, infinite: true },
  grace: { min: 0, max: Number.POSITIVE_INFINITY, infinite: true },
} as const;

/** The value `--<flag> <text>` means, or undefined when the flag must refuse it. */
export function meaning(flag: keyof typeof FLAGS, d: DurationText): number | undefined {
  const { min, max, infinite: takesInf } = FLAGS[flag];
  if (d.ms === undefined) return undefined;
  if (d.ms === Number.POSITIVE_INFINITY)
    return takesInf && /^(inf|Infinity)$/.test(d.text) ? d.ms : undefined;
  return d.ms >= min && d.ms <= max ? d.ms : undefined;
}
