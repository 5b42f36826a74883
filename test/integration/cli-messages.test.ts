// What the CLI says on the paths a new user takes (issue 13, item 10): one prefix per message
// ("leasehold run: run: missing the lock name" before), parse errors in its own words with the
// right hint (`--ttl -5` printed node's parseArgs text and "put the command to run after --"),
// help that links to docs that exist, and a demo that exits 69 when it cannot reach Redis and
// prints its first section heading before the first worker event.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { CLI } from '../harness/cli.ts';
import { useRedis, within } from '../harness/leasehold.ts';
import { reapOnExit } from '../harness/reaper.ts';

const redis = useRedis();

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `leasehold <args>` to completion (or until `until` is in stdout, then stops it). */
async function leasehold(args: string[], env: NodeJS.ProcessEnv = {}, until?: string): Promise<Outcome> {
  const child = spawn(process.execPath, [...CLI, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  reapOnExit(child);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => {
    out.stdout += chunk.toString();
    if (until !== undefined && out.stdout.includes(until)) child.kill('SIGTERM');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const [code] = (await within(once(child, 'close'), 30_000, `leasehold ${args.join(' ')}`)) as [number];
  return { code, ...out };
}

const down = 'redis://127.0.0.1:1';

describe('leasehold CLI messages', () => {
  test('a missing lock name is said once, with one prefix', async () => {
    for (const sub of ['run', 'status', 'watch']) {
      const { code, stderr } = await leasehold([sub, '--redis', down]);
      assert.equal(code, 64);
      assert.equal(stderr, `leasehold ${sub}: missing the lock name (see --help)\n`);
    }
    const release = await leasehold(['release', 'job', '--redis', down]);
    assert.match(release.stderr, /^leasehold release: --force is required/);
  });

  test('--ttl -5 and --ttl 5 are refused in the CLI own words, without the "after --" hint', async () => {
    const negative = await leasehold(['run', 'job', '--ttl', '-5', '--redis', down, '--', 'true']);
    assert.equal(negative.code, 64);
    assert.equal(
      negative.stderr,
      'leasehold run: --ttl must be a duration like 500, 500ms, 10s, 2m, 1h or 2d; a negative one is not accepted (see --help)\n',
    );
    const short = await leasehold(['run', 'job', '--ttl', '5', '--redis', down, '--', 'true']);
    assert.equal(short.code, 64);
    assert.equal(
      short.stderr,
      'leasehold run: --ttl must be a duration from 12 ms to 2147483647 ms (24 d 20 h); got 5\n',
    );
    const unknown = await leasehold(['status', 'job', '--bogus']);
    assert.equal(unknown.stderr, 'leasehold status: unknown option --bogus (see --help)\n');
  });

  test('help points at documentation online, not at paths the package does not ship', async () => {
    const { stdout } = await leasehold(['--help']);
    assert.match(stdout, /https:\/\/github\.com\/leasehold-js\/leasehold\/blob\/main\/docs\/cli\.md/);
    assert.doesNotMatch(stdout, /[^/]docs\/cli\.md/);
  });

  test('demo exits 69 when it cannot reach Redis', async () => {
    const { code, stderr } = await leasehold(['demo'], { REDIS_URL: down });
    assert.equal(code, 69);
    assert.match(stderr, /Could not reach Redis/);
  });

  test('demo prints its first section heading before the first worker event', async () => {
    const { stdout } = await leasehold(['demo'], { REDIS_URL: redis.server.url }, 'holds the lock');
    const heading = stdout.indexOf('1. Contention');
    assert.ok(heading !== -1 && heading < stdout.indexOf('holds the lock'), stdout);
  });
});
