// Issue 28 for `leasehold run` against a redis-server: random --ttl, --timeout and --grace values
// (well-formed or not, with units up to days, inf, far beyond 2^31-1 ms), with the lock free or
// held elsewhere. Each case ends as docs/cli.md says: a usage error naming the flag (64); the
// command run with the lease's PTTL within --ttl; 75 after a short --timeout; still waiting after
// a long one (`--timeout 30d` timed out at once before the fix, with a TimeoutOverflowWarning);
// after a loss, SIGKILL after a short --grace and not before a long one. Node never warns.
// cli-inputs-views.test.ts holds the other commands' cases.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Leasehold } from '../../src/index.ts';
import { CLI } from '../harness/cli.ts';
import { type Cli, clean, output, PROBE_MS } from '../harness/inputs/cli-checks.ts';
import { type DurationText, infinite, malformed, meaning } from '../harness/inputs/cli-space.ts';
import { show } from '../harness/inputs/space.ts';
import { lockKey, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { reapOnExit } from '../harness/reaper.ts';
import { command, info } from '../harness/resp.ts';

const redis = useRedis();

function cli(prefix: string, args: string[]): Cli {
  const child = spawn(
    process.execPath,
    [...CLI, 'run', '--redis', redis.server.url, '--prefix', prefix, '--driver', testDriver, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  reapOnExit(child);
  const out: Cli = {
    child,
    stdout: '',
    stderr: '',
    exit: once(child, 'close').then(
      ([code, signal]) => (code as number | null) ?? 128 + (signal === 'SIGKILL' ? 9 : 0),
    ),
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    out.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  return out;
}

/** Clients connected to the server now (the test's own INFO connection included). */
async function connectedClients(): Promise<number> {
  return Number((await info(redis.server.port, 'clients'))['connected_clients']);
}

/** Resolves once more clients than `before` are connected: `cli` has reached the server. */
async function connected(cli: Cli, before: number): Promise<void> {
  const deadline = Date.now() + 15_000;
  while ((await connectedClients()) <= before) {
    if (cli.child.exitCode !== null) throw new Error(`exited before connecting: ${cli.stderr}`);
    if (Date.now() > deadline) throw new Error(`not connected within 15 s: ${cli.stderr}`);
    await sleep(10);
  }
}

/** Whether `cli` is still running `ms` from now. */
async function stillRunning(cli: Cli, ms: number): Promise<boolean> {
  return (await Promise.race([cli.exit.then(() => false), sleep(ms).then(() => true)])) as boolean;
}

/** A command that says it runs, then runs until a signal (SIGTERM ignored when `stubborn`). */
function child(stubborn: boolean): string[] {
  const ignore = stubborn ? "process.on('SIGTERM',()=>{});" : '';
  return ['--', process.execPath, '-e', `${ignore}process.stdout.write('ready');setInterval(()=>{},1000)`];
}

/** Timeouts the test can judge without timing flakiness: 0, short (<= 25 ms), long (>= 10 s). */
const timeoutText: fc.Arbitrary<DurationText> = fc.oneof(
  malformed,
  infinite,
  fc.constantFrom('0', '0ms', '0d', '5', '20ms', '0.01s').map((text) => ({ text, ms: -1 })),
  fc
    .constantFrom('10s', '1h', '2d', '30d', '2147483648', '2147483647000', '99999999999999999999', '1000000d')
    .map((text) => ({ text, ms: -2 })),
);

/** Parses through the documented grammar (cli-space.ts) the values given as categories above. */
function timeoutMeaning(d: DurationText): number | undefined {
  if (d.ms === undefined || d.ms === Number.POSITIVE_INFINITY) return meaning('timeout', d);
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(d.text);
  const unit = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m?.[2] ?? 'ms'] ?? 1;
  return meaning('timeout', { text: d.text, ms: Number(m?.[1]) * unit });
}

const ttlText: fc.Arbitrary<DurationText> = fc.oneof(
  malformed,
  infinite,
  fc
    .constantFrom(
      '12',
      '300ms',
      '10s',
      '1h',
      '2d',
      '24d',
      '25d',
      '30d',
      '11',
      '0',
      '2147483647',
      '2147483648',
    )
    .map((text) => {
      const m = /^(\d+)(ms|s|h|d)?$/.exec(text);
      const unit = { ms: 1, s: 1e3, h: 36e5, d: 864e5 }[m?.[2] ?? 'ms'] ?? 1;
      return { text, ms: Number(m?.[1]) * unit };
    }),
);

describe('leasehold run: every duration flag does what docs/cli.md says', () => {
  test('--ttl and --timeout, with the lock free or held elsewhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          ttl: fc.option(ttlText, { nil: undefined }),
          timeout: fc.option(timeoutText, { nil: undefined }),
          busy: fc.boolean(),
        }),
        async (c) => {
          const what = show('run', c);
          const prefix = uniquePrefix('cli-in');
          const ttl = c.ttl === undefined ? 10_000 : meaning('ttl', c.ttl);
          const timeout = c.timeout === undefined ? Number.POSITIVE_INFINITY : timeoutMeaning(c.timeout);
          const args = [
            'job',
            ...(c.ttl === undefined ? [] : ['--ttl', c.ttl.text]),
            ...(c.timeout === undefined ? [] : ['--timeout', c.timeout.text]),
          ];
          if (ttl === undefined || timeout === undefined) {
            const run = cli(prefix, [...args, ...child(false)]);
            assert.equal(await run.exit, 64, `${what}: ${run.stderr}`);
            const named = [ttl === undefined ? '--ttl' : '', timeout === undefined ? '--timeout' : ''].filter(
              Boolean,
            );
            assert.ok(
              named.some((flag) => run.stderr.includes(`leasehold run: ${flag}`)),
              `${what}: ${run.stderr}`,
            );
            return clean(run, what);
          }
          const other = c.busy
            ? await Leasehold.connect({ url: redis.server.url, prefix, driver: testDriver })
            : undefined;
          const held = await other?.acquire('job');
          try {
            const clients = await connectedClients();
            const run = cli(prefix, [...args, ...child(false)]);
            if (!c.busy) {
              // A TTL of a few ms is shorter than a stall of a loaded machine (spawning the
              // command, CI running two suites): the lease may run out before the test looks, and
              // then `run` must say so, end the command and exit 76, as docs/cli.md promises.
              const lostEarly = async (): Promise<boolean> => {
                if (ttl >= 1_000 || !/lease on "job" lost/.test(run.stderr)) return false;
                assert.equal(await within(run.exit, 15_000, what), 76, `${what}: ${run.stderr}`);
                return true;
              };
              // A timeout of a few ms can run out before Redis answers the first attempt on a
              // loaded machine (a CI rehearsal: "not acquired within 10 ms" for a free lock): `run`
              // then exits 75, as docs/cli.md says for a timeout that ran out.
              const timedOutEarly = async (): Promise<boolean> => {
                if (timeout >= 1_000 || !/not acquired within/.test(run.stderr)) return false;
                assert.equal(await within(run.exit, 15_000, what), 75, `${what}: ${run.stderr}`);
                return true;
              };
              const started = await output(run, 'stdout', 'ready').then(
                () => true,
                async (error: unknown) => {
                  if ((await lostEarly()) || (await timedOutEarly())) return false;
                  throw error;
                },
              );
              const pttl = Number(await command(redis.server.port, ['PTTL', lockKey(prefix, 'job')]));
              // Gone already: the lease ran out after the command spoke; `run` says so at once.
              if (started && pttl <= 0 && ttl < 1_000) await output(run, 'stderr', 'lost').catch(() => {});
              if (!started || (pttl <= 0 && (await lostEarly()))) return clean(run, what);
              assert.ok(pttl > 0 && pttl <= Math.ceil(ttl), `${what}: PTTL ${pttl} for --ttl ${ttl}`);
              assert.ok(pttl >= Math.min(ttl, ttl - 5_000), `${what}: PTTL ${pttl} far below --ttl ${ttl}`);
              run.child.kill('SIGTERM');
              assert.equal(await run.exit, 143, `${what}: ${run.stderr}`);
            } else if (timeout <= 25) {
              assert.equal(await within(run.exit, 15_000, what), 75, `${what}: ${run.stderr}`);
            } else {
              assert.ok(timeout >= 10_000, `${what}: no verdict for ${timeout} ms`);
              // Connected (a spawned CLI takes a while to start), then waiting: not timed out.
              await connected(run, clients);
              assert.ok(await stillRunning(run, PROBE_MS), `${what}: exited early: ${run.stderr}`);
              run.child.kill('SIGINT');
              assert.equal(await run.exit, 130, `${what}: ${run.stderr}`);
              assert.match(run.stderr, /gave up waiting/, what);
            }
            clean(run, what);
          } finally {
            await held?.release();
            await other?.close();
          }
        },
      ),
      { numRuns: 8 },
    );
  });

  test('--grace after a loss: SIGKILL after a short one, not before a long one (inf: never)', async () => {
    const graceText: fc.Arbitrary<DurationText> = fc.oneof(
      malformed,
      fc.constantFrom('0', '10', '20ms').map((text) => ({ text, ms: Number.parseInt(text, 10) })),
      fc.constantFrom('10s', '2d', '30d', '2147483648', 'inf').map((text) => ({ text, ms: 1e10 })),
    );
    await fc.assert(
      fc.asyncProperty(graceText, async (g) => {
        const what = show('grace', g);
        const prefix = uniquePrefix('cli-grace');
        const grace = g.ms === undefined ? undefined : g.ms;
        const run = cli(prefix, ['job', '--ttl', '300', '--grace', g.text, ...child(true)]);
        if (grace === undefined) {
          assert.equal(await run.exit, 64, `${what}: ${run.stderr}`);
          assert.match(run.stderr, /^leasehold run: --grace /, what);
          return clean(run, what);
        }
        await output(run, 'stdout', 'ready');
        const thief = await Leasehold.connect({ url: redis.server.url, prefix, driver: testDriver });
        try {
          const taken = await thief.forceAcquire('job');
          await output(run, 'stderr', 'sending SIGTERM');
          if (grace <= 25) {
            assert.equal(await within(run.exit, 15_000, what), 76, `${what}: ${run.stderr}`);
          } else {
            // The command ignores SIGTERM: only SIGKILL, after --grace, would end it now.
            assert.ok(
              await stillRunning(run, PROBE_MS),
              `${what}: killed before --grace ${g.text}: ${run.stderr}`,
            );
            run.child.kill('SIGINT');
            assert.equal(await run.exit, 76, `${what}: ${run.stderr}`);
          }
          clean(run, what);
          await taken.release();
        } finally {
          await thief.close();
        }
      }),
      { numRuns: 5 },
    );
  });
});
