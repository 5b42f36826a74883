// Issue 28 for the commands that read or release a lock by name, against a redis-server: watch
// and top on a lock whose PTTL is beyond 2^31-1 ms read it once and never warn; status and
// release --force take every lock name the library takes and refuse the rest with a usage error
// (64). cli-inputs-run.test.ts holds `leasehold run`'s duration flags.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Leasehold } from '../../src/index.ts';
import { CLI } from '../harness/cli.ts';
import { type Cli, clean, output, PROBE_MS } from '../harness/inputs/cli-checks.ts';
import * as space from '../harness/inputs/space.ts';
import { show } from '../harness/inputs/space.ts';
import { aborted, lockKey, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { reapOnExit } from '../harness/reaper.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();

describe('leasehold run: every duration flag does what docs/cli.md says', () => {
  test('watch and top, on a lock whose PTTL is beyond 2^31-1 ms, read it once and do not warn', async () => {
    // Each re-read the key's TTL at once: setTimeout fired its 3e9 ms after 1 ms (about 400
    // reads and warnings a second before the fix).
    const prefix = uniquePrefix('cli-long');
    await command(redis.server.port, ['SET', lockKey(prefix, 'raw'), 'token~1~someone', 'PX', 3_000_000_000]);
    for (const sub of [
      ['watch', 'raw'],
      ['top', '--json'],
    ]) {
      const view = spawn(
        process.execPath,
        [...CLI, ...sub, '--redis', redis.server.url, '--prefix', prefix, '--driver', testDriver],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      reapOnExit(view);
      const out: Cli = {
        child: view,
        stdout: '',
        stderr: '',
        exit: once(view, 'close').then(([code]) => code as number),
      };
      view.stdout?.on('data', (chunk: Buffer) => {
        out.stdout += chunk.toString();
      });
      view.stderr?.on('data', (chunk: Buffer) => {
        out.stderr += chunk.toString();
      });
      await output(out, 'stdout', sub[0] === 'top' ? '"ready"' : 'raw');
      await sleep(PROBE_MS);
      view.kill('SIGINT');
      await out.exit;
      clean(out, sub.join(' '));
      const lines = out.stdout.trim().split('\n').length;
      assert.ok(
        lines <= 5,
        `${sub.join(' ')}: ${lines} lines in ${PROBE_MS} ms: ${out.stdout.slice(0, 300)}`,
      );
    }
  });

  test('status and release --force take any lock name the library takes, and refuse the rest', async () => {
    // Through argv: no NUL (no process can receive one), no lone surrogate (argv is UTF-8), and no
    // leading "-" (an option; `leasehold status -- -name` reaches it).
    const names = space.name.filter(
      (n) =>
        typeof n.value === 'string' && !n.value.includes('\u0000') && !/^-|[\ud800-\udfff]/u.test(n.value),
    );
    await fc.assert(
      fc.asyncProperty(names, async (n) => {
        const what = show('name', n);
        const prefix = uniquePrefix('cli-name');
        const name = n.value as string;
        const owner = await Leasehold.connect({ url: redis.server.url, prefix, driver: testDriver });
        try {
          const lease = n.ok ? await owner.acquire(name, { owner: 'cli-names' }) : undefined;
          const status = await run(prefix, ['status', name, '--json']);
          const release = await run(prefix, ['release', '--force', name, '--json']);
          for (const [sub, out] of [
            ['status', status],
            ['release', release],
          ] as const) {
            clean(out, `${what} ${sub}`);
            if (!n.ok) {
              assert.equal(out.code, 64, `${what} ${sub}: ${out.stderr}`);
              assert.match(
                out.stderr,
                new RegExp(`^leasehold ${sub}: (<name> |missing the lock name)`),
                what,
              );
            } else {
              assert.equal(out.code, 0, `${what} ${sub}: ${out.stderr}`);
            }
          }
          if (n.ok) {
            const state = JSON.parse(status.stdout) as {
              name: string;
              held: boolean;
              primitives: { holders: { owner: string }[] }[];
            };
            const owner = state.primitives[0]?.holders[0]?.owner;
            assert.deepEqual([state.name, state.held, owner], [name, true, 'cli-names'], what);
            assert.deepEqual(JSON.parse(release.stdout).released, true, what);
            await within(aborted(lease!.signal), 5_000, `${what}: the holder was not told`);
          }
        } finally {
          await owner.close();
        }
      }),
      { numRuns: 5 },
    );
  });
});

/** Runs `leasehold <args>` against this file's server to its end. */
async function run(
  prefix: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [sub = '', ...rest] = args;
  const child = spawn(
    process.execPath,
    [...CLI, sub, '--redis', redis.server.url, '--prefix', prefix, '--driver', testDriver, ...rest],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  reapOnExit(child);
  const out = { code: 0, stdout: '', stderr: '' };
  child.stdout?.on('data', (chunk: Buffer) => {
    out.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const [code] = (await within(once(child, 'close'), 15_000, `leasehold ${args.join(' ')}`)) as [number];
  return { ...out, code };
}
