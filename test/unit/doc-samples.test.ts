// Every ```ts block of README.md and docs/*.md compiles against the sources.
import assert from 'node:assert/strict';
import { test } from 'node:test';
// @ts-expect-error: a plain .mjs script without type declarations
import { check, samples } from '../../scripts/check-doc-samples.mjs';

test('samples() finds ts blocks, their Markdown line, and honours no-check', () => {
  const found = samples(
    '# x\n\n```ts\nconst a = 1;\n```\n\n```ts no-check\nnope(\n```\n```sh\nls\n```\n',
  ) as {
    line: number;
    code: string;
    check: boolean;
    run: boolean;
  }[];
  assert.deepEqual(found, [
    { line: 4, code: 'const a = 1;', check: true, run: true },
    { line: 8, code: 'nope(', check: false, run: false },
  ]);
});

test('every TypeScript sample in README.md and docs/*.md compiles', () => {
  const { count, ok, output } = check() as { count: number; ok: boolean; output: string };
  assert.ok(ok, output);
  assert.ok(count > 0);
});
