/**
 * The input space of the public API as docs/errors.md states it, restated here on purpose (an
 * oracle that imported the library's own checks would agree with any bug in them): for each
 * option, values inside its documented range and values outside it, and how an options object
 * mixes them. The property tests (test/harness/inputs/*.ts) feed these to every entry point.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';

/** Documented bounds (docs/errors.md, "Accepted input"). */
export const MIN_TTL = 12;
export const MAX_TTL = 2 ** 31 - 1;
export const MAX_NAME = 1024;
export const MAX_OWNER = 200;
export const MAX_VALUE = 65_536;
export const MAX_LIMIT = 100_000;
export const MAX_LIST_LIMIT = 10_000;
export const MAX_NAMES = 64;

/** One value for an option, and whether the documentation accepts it. */
export interface Choice<T = unknown> {
  value: T;
  ok: boolean;
}

const good = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<Choice<T>> => arb.map((value) => ({ value, ok: true }));
const bad = (arb: fc.Arbitrary<unknown>): fc.Arbitrary<Choice> => arb.map((value) => ({ value, ok: false }));

/** Values no numeric option accepts. */
const notANumber = fc.oneof(fc.constantFrom(null, true, '100', '', 10n, [], {}), fc.string({ maxLength: 4 }));

/**
 * Timeouts a waiting test can tell apart without timing flakiness: 0 (one attempt), short ones
 * (1-25 ms, which must run out), and long ones (10 s and more, which must not have run out when
 * the test looks 20 ms later, whatever the load) up to far beyond setTimeout's 2^31-1 ms.
 */
export const SHORT_TIMEOUT = 25;
export const LONG_TIMEOUT = 10_000;
export const timeout: fc.Arbitrary<Choice> = fc.oneof(
  good(fc.constant(0)),
  good(
    fc.oneof(
      fc.integer({ min: 1, max: SHORT_TIMEOUT }),
      fc.double({ min: 0.001, max: SHORT_TIMEOUT, noNaN: true }),
    ),
  ),
  good(
    fc.oneof(
      fc.constantFrom(MAX_TTL, MAX_TTL + 1, 2 ** 31, 2_147_483_647_000, 2 ** 53, 1e300, Infinity),
      fc.integer({ min: LONG_TIMEOUT, max: 2 ** 31 - 2 }),
      fc.double({ min: LONG_TIMEOUT, max: 1e300, noNaN: true }),
    ),
  ),
  bad(fc.oneof(fc.constantFrom(-1, -0.5, -Infinity, Number.NaN), fc.integer({ max: -1 }), notANumber)),
);

/** Lease TTLs: the documented range is MIN_TTL..MAX_TTL ms, fractions included. */
export const ttl: fc.Arbitrary<Choice> = fc.oneof(
  good(
    fc.oneof(
      fc.constantFrom(MIN_TTL, MIN_TTL + 0.5, MAX_TTL, MAX_TTL - 0.5),
      fc.integer({ min: 1_000, max: 60_000 }),
      fc.integer({ min: 60_000, max: MAX_TTL }),
      fc.double({ min: 1_000, max: MAX_TTL, noNaN: true }),
    ),
  ),
  bad(
    fc.oneof(
      fc.constantFrom(0, -1, MIN_TTL - 1, MIN_TTL - 0.5, MAX_TTL + 1, 2 ** 31, 1e300, Infinity, Number.NaN),
      fc.double({ min: MAX_TTL + 1, max: 1e300, noNaN: true }),
      notANumber,
    ),
  ),
);

/** Control characters (U+0000-U+001F, U+007F), which owners may not hold. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Text with the characters that trip code up: unicode, astral, glob and hash-tag characters. */
const tricky = fc.oneof(
  { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }) },
  fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }),
  fc.constantFrom('ключ', '🔒', 'e\u0301', '名前', '{tag}', 'a{b}c', 'x}:fence', 'a*b?[c]\\', 'x}', '{'),
);

/** A lone surrogate: in a `u` regex a valid pair is one code point, so only lone halves match. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;
const wellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** Strings that are not well-formed UTF-16 (a lone surrogate): Redis would store U+FFFD instead. */
const loneSurrogate = fc.constantFrom('\ud800', 'a\udc00', 'x\ud83d', '\udfff\ud800');

/**
 * Lock names: 1..1024 UTF-16 code units of well-formed text that does not start with "}"
 * (that would empty the keys' hash tag); control characters are accepted.
 */
export const name: fc.Arbitrary<Choice> = fc.oneof(
  { weight: 6, arbitrary: good(tricky.filter((s) => wellFormed(s) && !s.startsWith('}'))) },
  good(
    fc.constantFrom('a\nb', 'tab\there', '\u0000', '\u007f', 'x'.repeat(MAX_NAME), `${'🔒'.repeat(511)}ab`),
  ),
  bad(fc.constantFrom('', 'x'.repeat(MAX_NAME + 1), '🔒'.repeat(513), '}', '}x', '}{a}')),
  bad(loneSurrogate),
  bad(fc.constantFrom(null, undefined, 42, ['a'], {}, Symbol('x'))),
);

/** Owners: 1..200 characters, no control characters, well-formed. */
export const owner: fc.Arbitrary<Choice> = fc.oneof(
  good(tricky.filter((s) => wellFormed(s) && !CONTROL.test(s))),
  good(fc.constantFrom('o'.repeat(MAX_OWNER), 'billing-worker-3')),
  bad(fc.constantFrom('', 'o'.repeat(MAX_OWNER + 1), 'a\nb', '\u0000', 'tab\t', 'del\u007f', 42, null)),
  bad(loneSurrogate),
);

/** Election values: any well-formed string up to 65,536 characters, the empty one included. */
export const value: fc.Arbitrary<Choice> = fc.oneof(
  good(fc.constantFrom('', 'node-a', 'v'.repeat(MAX_VALUE), 'a\nb\u0000')),
  good(tricky.filter((s) => wellFormed(s))),
  bad(fc.constantFrom('v'.repeat(MAX_VALUE + 1), 42, null, undefined, {})),
  bad(loneSurrogate),
);

/** An AbortSignal (fresh, or aborted already) or something that is not one. */
export const signal: fc.Arbitrary<Choice> = fc.oneof(
  good(fc.constant('fresh')),
  good(fc.constant('aborted')),
  bad(fc.constantFrom(null, 'signal', {}, { aborted: false }, 1)),
);

/** Integers from `min` to `max`, and what is not one. */
export function integer(min: number, max: number): fc.Arbitrary<Choice> {
  return fc.oneof(
    good(fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max }))),
    bad(fc.constantFrom(min - 1, max + 1, min + 0.5, Number.NaN, Infinity, -Infinity)),
    bad(notANumber),
  );
}

/** An options object built from `spaces`: each key left out, valid or not; sometimes a stray key. */
export interface Options {
  /** What is passed (signal choices are still 'fresh' / 'aborted': see `materialize`). */
  options: unknown;
  /** The option names whose value is outside its range ('options' when not an object at all). */
  bad: string[];
  /** The valid choices made, by option. */
  chosen: Record<string, unknown>;
}

export function optionsOf(spaces: Record<string, fc.Arbitrary<Choice>>): fc.Arbitrary<Options> {
  const keys = Object.keys(spaces);
  const valid = (key: string) =>
    fc.option(
      spaces[key]!.filter((c) => c.ok),
      { nil: undefined, freq: 2 },
    );
  const invalid = (key: string) => spaces[key]!.filter((c) => !c.ok);
  const build = (picked: readonly (Choice | undefined)[], stray: string | null): Options => {
    const options: Record<string, unknown> = {};
    const badKeys: string[] = [];
    const chosen: Record<string, unknown> = {};
    for (const [i, choice] of picked.entries()) {
      const key = keys[i]!;
      if (choice === undefined) continue;
      options[key] = choice.value;
      if (choice.ok) chosen[key] = choice.value;
      else badKeys.push(key);
    }
    if (stray !== null) {
      options[stray] = 1;
      badKeys.push(stray);
    }
    return { options, bad: badKeys, chosen };
  };
  // Every option in range (the behaviour to check), or exactly one out of range (its error).
  const allValid = fc.tuple(...keys.map(valid)).map((picked) => build(picked, null));
  const oneBad = fc
    .nat(keys.length - 1)
    .chain((wrong) => fc.tuple(...keys.map((key, i) => (i === wrong ? invalid(key) : valid(key)))))
    .map((picked) => build(picked, null));
  const stray = fc
    .tuple(fc.tuple(...keys.map(valid)), fc.constantFrom('tll', 'timeOut', 'foo'))
    .map(([picked, key]) => build(picked, key));
  return fc.oneof(
    { weight: 8, arbitrary: allValid },
    { weight: 4, arbitrary: oneBad },
    { weight: 1, arbitrary: stray },
    fc.constant<Options>({ options: undefined, bad: [], chosen: {} }),
    fc
      .constantFrom(null, 5, 'ttl', [1])
      .map((options): Options => ({ options, bad: ['options'], chosen: {} })),
  );
}

/** Turns the 'fresh' / 'aborted' signal choices into AbortSignals, keeping their controller. */
export function materialize(o: Options): { options: unknown; controller: AbortController | undefined } {
  if (o.options === null || typeof o.options !== 'object' || Array.isArray(o.options)) {
    return { options: o.options, controller: undefined };
  }
  const options = { ...(o.options as Record<string, unknown>) };
  let controller: AbortController | undefined;
  if (options['signal'] === 'fresh' || options['signal'] === 'aborted') {
    controller = new AbortController();
    if (options['signal'] === 'aborted') controller.abort(new Error('aborted before the call'));
    options['signal'] = controller.signal;
  }
  return { options, controller };
}

/**
 * The documented error for bad input: a TypeError whose message starts with "leasehold:" and
 * names one of the options that were bad (or, for an unknown key, says so).
 */
export function assertInputError(error: unknown, badKeys: readonly string[], what: string): void {
  assert.ok(
    error instanceof TypeError,
    `${what}: expected a TypeError for ${badKeys.join(', ')}, got ${String(error)}`,
  );
  assert.match(error.message, /^leasehold: /, `${what}: message "${error.message}"`);
  const named = badKeys.some(
    (key) =>
      error.message.includes(`option "${key}"`) ||
      error.message.includes(`unknown option "${key}"`) ||
      (key.startsWith('names') && error.message.includes('option "names')),
  );
  assert.ok(named, `${what}: "${error.message}" names none of ${badKeys.join(', ')}`);
}

/** A case as one line for failure messages: long strings cut, bigints and symbols spelled out. */
export function show(label: string, c: unknown): string {
  const json = JSON.stringify(c, (_k, v: unknown) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'symbol' || typeof v === 'number') return String(v);
    if (typeof v === 'string' && v.length > 40) return `${v.slice(0, 20)}…(${v.length} chars)`;
    return v;
  });
  return `${label} ${json}`;
}

/** Runs `call` (sync throw or rejection alike) and returns its outcome. */
export async function settle<T>(
  call: () => T | Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    return { ok: false, error };
  }
}
