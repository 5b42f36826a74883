// Issue 28 for the command line: every duration flag accepts what docs/cli.md says (a number of
// ms, or with a unit ms, s, m, h, d; inf for --timeout and --grace) over its whole range, and
// refuses the rest with a usage error (exit 64) naming the flag; `--ttl 2d` is accepted and
// `--ttl 30d` (beyond the library's 2^31-1 ms) refused, in those words. Also --limit and
// --port take digits only, and every duration prints in units a reader can take in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { CliError, EXIT } from '../../src/cli/exit.ts';
import { duration, followLimit, formatMs } from '../../src/cli/values.ts';
import { durationText, FLAGS, meaning } from '../harness/inputs/cli-space.ts';

test('duration flags: accepted exactly when the docs say, with the value they say', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('ttl' as const, 'timeout' as const, 'grace' as const),
      durationText,
      (flag, d) => {
        const expected = meaning(flag, d);
        let got: number | undefined;
        try {
          got = duration(d.text, flag, 1, FLAGS[flag]);
        } catch (error) {
          assert.ok(error instanceof CliError, `--${flag} ${d.text}: ${String(error)}`);
          assert.equal(error.exitCode, EXIT.usage);
          assert.match(error.message, new RegExp(`^--${flag} `), `--${flag} ${d.text}: "${error.message}"`);
          assert.equal(expected, undefined, `--${flag} ${JSON.stringify(d.text)} refused: ${error.message}`);
          return;
        }
        assert.notEqual(expected, undefined, `--${flag} ${JSON.stringify(d.text)} accepted as ${got}`);
        assert.ok(
          Math.abs((got as number) - (expected as number)) <= 1e-3 || got === expected,
          `${d.text}: ${got}`,
        );
      },
    ),
    { numRuns: 2_000 },
  );
});

test('--ttl 2d and 1h are accepted; --ttl 30d is refused with the range', () => {
  assert.equal(duration('2d', 'ttl', 1, FLAGS.ttl), 172_800_000);
  assert.equal(duration('1h', 'ttl', 1, FLAGS.ttl), 3_600_000);
  assert.equal(duration('0.1h', 'ttl', 1, FLAGS.ttl), 360_000);
  assert.equal(duration('1h', 'timeout', 1, FLAGS.timeout), 3_600_000);
  assert.equal(duration('30d', 'timeout', 1, FLAGS.timeout), 2_592_000_000);
  assert.throws(
    () => duration('30d', 'ttl', 1, FLAGS.ttl),
    (e: Error) => e.message === '--ttl must be a duration from 12 ms to 2147483647 ms (24 d 20 h); got 30d',
  );
});

test('--limit takes digits only, 1 to 10000', () => {
  fc.assert(
    fc.property(fc.oneof(fc.nat({ max: 20_000 }).map(String), fc.string({ maxLength: 6 })), (text) => {
      const ok = /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 10_000;
      let got: number | undefined;
      try {
        got = followLimit(text);
      } catch (error) {
        assert.ok(error instanceof CliError && /^--limit /.test(error.message), String(error));
        assert.equal(ok, false, `--limit ${JSON.stringify(text)} refused`);
        return;
      }
      assert.ok(ok, `--limit ${JSON.stringify(text)} accepted as ${got}`);
      assert.equal(got, Number(text));
    }),
    { numRuns: 1_000 },
  );
  for (const text of ['', '0x10', '1e3', ' 5']) assert.throws(() => followLimit(text), /--limit/);
});

test('formatMs: one or two units, the smaller one within its range, never NaN', () => {
  fc.assert(
    fc.property(fc.oneof(fc.double({ min: 0, max: 1e12, noNaN: true }), fc.nat()), (ms) => {
      const text = formatMs(ms);
      const m = /^(\d+(?:\.\d)?) (ms|s)$|^(\d+) (min|h|d) (\d+) (s|min|h)$/.exec(text);
      assert.ok(m !== null, `${ms} -> "${text}"`);
      if (m[5] !== undefined) {
        const cap = { s: 60, min: 60, h: 24 }[m[6] as 's' | 'min' | 'h'];
        assert.ok(Number(m[5]) < cap, `${ms} -> "${text}"`);
      } else {
        // One unit: within its range too ("60.0 s" and "1000 ms" were rounded up).
        assert.ok(Number(m[1]) < (m[2] === 's' ? 60 : 1_000), `${ms} -> "${text}"`);
      }
    }),
    { numRuns: 2_000 },
  );
  assert.equal(formatMs(Number.POSITIVE_INFINITY), 'forever');
  assert.equal(formatMs(119_600), '1 min 59 s');
  assert.equal(formatMs(59_999), '59.9 s');
  assert.equal(formatMs(999.6), '999 ms');
});

// A lease token is base64url: one in 64 starts with "-", and `--token -abc` then reads as an
// option. The message names the form that carries it (cli-release.test.ts uses it).
test('an option value that starts with "-": the message says to pass it as --option=<value>', async () => {
  const { parseArgsMessage } = await import('../../src/cli/common.ts');
  const { parseArgs } = await import('node:util');
  let caught: { code: string; message: string } | undefined;
  try {
    parseArgs({ args: ['--token', '-abc'], options: { token: { type: 'string' } } });
  } catch (error) {
    caught = error as { code: string; message: string };
  }
  assert.ok(caught !== undefined, 'parseArgs refuses the value');
  assert.equal(
    parseArgsMessage(caught, 'release'),
    '--token needs a value; the argument after it starts with "-" (a value that does goes as --token=<value>)',
  );
  const parsed = parseArgs({ args: ['--token=-abc'], options: { token: { type: 'string' } } });
  assert.equal(parsed.values.token, '-abc');
});
