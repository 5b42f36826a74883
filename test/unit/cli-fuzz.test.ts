// Fuzzing of the command line's flags: random, mostly wrong, argument lists must end in a
// documented exit code with a one-line message, never a stack trace, an internal error or a
// warning from Node (a TimeoutOverflowWarning is how an out-of-range duration showed: issue 28).
// Every Redis URL points at a closed port, so nothing here can reach a real server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import fc from 'fast-check';
import { CLI } from '../harness/cli.ts';

const DEAD = 'redis://127.0.0.1:1';
/** Usage error, Redis unreachable, not acquired (docs/cli.md). */
const EXPECTED = new Set([64, 69, 75]);

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      env: { ...process.env, REDIS_URL: DEAD },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

const command = fc.constantFrom(
  'run',
  'status',
  'release',
  'watch',
  'top',
  'dashboard',
  'doctor',
  'demo',
  'bogus',
  '',
);
const flag = fc.constantFrom(
  '--ttl',
  '--timeout',
  '--grace',
  '--wait',
  '--no-wait',
  '--json',
  '--force',
  '--prefix',
  '--driver',
  '--redis',
  '--owner',
  '--limit',
  '--port',
  '--host',
  '--allow-release',
  '--nope',
  '-x',
);
const value = fc.oneof(
  fc.constantFrom('', '0', '-5', 'NaN', 'Infinity', 'inf', '1e99', 'abc', '{', 'ioredis', 'redis://', DEAD),
  fc.constantFrom(
    '1h',
    '2d',
    '30d',
    '0.5s',
    '2147483648',
    '9'.repeat(400),
    '0x10',
    'a\tb',
    '\u00e9\u{1f512}',
  ),
  fc.string({ maxLength: 12 }),
);

test('random flags end in a documented exit code with a clear message, never a crash', async () => {
  await fc.assert(
    fc.asyncProperty(
      command,
      fc.array(fc.tuple(flag, fc.option(value, { nil: undefined })), { maxLength: 4 }),
      fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }),
      async (sub, flags, name) => {
        const args = [sub, ...(name === undefined ? [] : [name])];
        for (const [f, v] of flags) args.push(f, ...(v === undefined ? [] : [v]));
        // Always point at the dead port last, so a valid command fails fast as unreachable.
        args.push('--redis', DEAD);
        if (sub === 'run') args.push('--', process.execPath, '-e', '0');
        const { code, stderr } = await run(args);
        assert.ok(code !== null && EXPECTED.has(code), `exit ${code} for ${JSON.stringify(args)}: ${stderr}`);
        assert.doesNotMatch(stderr, /\n\s+at .+:\d+:\d+/, `a stack trace for ${JSON.stringify(args)}`);
        assert.ok(stderr.trim().length > 0, `no message for ${JSON.stringify(args)}`);
        assert.doesNotMatch(stderr, /\(node:\d+\) \w*Warning/, `Node warned for ${JSON.stringify(args)}`);
      },
    ),
    { numRuns: 12 },
  );
});
