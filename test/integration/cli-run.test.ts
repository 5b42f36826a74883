// `leasehold run` end to end: real CLI processes (the build when it is fresh, else the source
// through tsx: test/harness/cli.ts) against a redis-server this file starts, with real child
// commands; and what every command does with --help, bad usage and an unreachable Redis.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLI } from '../harness/cli.ts';
import { type CliProcess, HOLDER, js, startCli, tokenOf } from '../harness/cli-process.ts';
import { lockKey, uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

const NODE = process.execPath;
/** Preload that stalls the CLI's event loop once it has a lease (test/harness/fixtures). */
const STALL = new URL('../harness/fixtures/stall-on-acquire.mjs', import.meta.url).href;

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

/** Starts `leasehold <args>` against this file's server with a private key prefix. */
const cli = (prefix: string, args: string[], env: NodeJS.ProcessEnv = {}): CliProcess =>
  startCli(server.url, prefix, args, env);

async function held(prefix: string, name: string): Promise<boolean> {
  return (await command(server.port, ['EXISTS', lockKey(prefix, name)])) === 1;
}

/** Waits until `n` connections have run a script (a second `run` has made its first attempt). */
function attempts(n: number): Promise<unknown> {
  return until(
    `${n} clients to have run a script`,
    async () => {
      const list = String(await command(server.port, ['CLIENT', 'LIST']));
      return (list.match(/cmd=evalsha/g) ?? []).length >= n;
    },
    { timeout: 10_000, interval: 20 },
  );
}

describe('leasehold CLI', () => {
  test('run: the command runs under the lock, sees its token and name; its exit code passes through', async () => {
    const prefix = uniquePrefix('cli');
    const run = cli(prefix, [
      'run',
      'job',
      '--',
      ...js('console.log(process.env.LEASEHOLD_LOCK, process.env.LEASEHOLD_FENCING_TOKEN); process.exit(3)'),
    ]);
    assert.equal(await run.done, 3, run.stderr);
    assert.match(run.stdout.trim(), /^job [1-9]\d*$/);
    assert.equal(await held(prefix, 'job'), false, 'released after the command exited');
  });

  test('run: a second run waits, then runs the moment the first releases', async () => {
    const prefix = uniquePrefix('cli');
    const first = cli(prefix, ['run', 'job', '--ttl', '5000', '--', ...js(HOLDER)]);
    await first.output('ready token=');
    const second = cli(prefix, ['run', 'job', '--ttl', '5000', '--', ...js(HOLDER)]);
    await attempts(2);
    assert.equal(second.stdout, '', 'the second command has not started');
    first.child.stdin?.end();
    assert.equal(await first.done, 0, first.stderr);
    const releasedAt = Date.now();
    await second.output('ready token=');
    assert.ok(tokenOf(second) > tokenOf(first), 'the second holder has a larger fencing token');
    // Woken by the release's notification, not by the 5 s TTL running out.
    assert.ok(
      Date.now() - releasedAt < 2_000,
      `second started ${Date.now() - releasedAt} ms after the release`,
    );
    second.child.stdin?.end();
    assert.equal(await second.done, 0, second.stderr);
  });

  test('run --no-wait exits 75 at once while the lock is held; --timeout exits 75 when it runs out', async () => {
    const prefix = uniquePrefix('cli');
    const holder = cli(prefix, ['run', 'job', '--', ...js(HOLDER)]);
    await holder.output('ready');
    const busy = cli(prefix, ['run', 'job', '--no-wait', '--', ...js('console.log("ran")')]);
    assert.equal(await busy.done, 75);
    assert.equal(busy.stdout, '');
    assert.match(busy.stderr, /held by another process/);
    const late = cli(prefix, ['run', 'job', '--timeout', '200', '--json', '--', ...js('console.log("ran")')]);
    assert.equal(await late.done, 75);
    const events = late.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(events.at(-1), { event: 'not-acquired', name: 'job', reason: 'timeout', timeout: 200 });
    holder.child.stdin?.end();
    assert.equal(await holder.done, 0);
  });

  test('run: an external DEL loses the lock; the command gets SIGTERM, then SIGKILL after --grace; exit 76', async () => {
    const prefix = uniquePrefix('cli');
    const stubborn = `process.on('SIGTERM', () => console.log('got SIGTERM, ignoring it'));
      console.log('ready'); setInterval(() => {}, 1000);`;
    const run = cli(prefix, [
      'run',
      'job',
      '--ttl',
      '500',
      '--grace',
      '300',
      '--json',
      '--',
      ...js(stubborn),
    ]);
    await run.output('ready');
    await command(server.port, ['DEL', lockKey(prefix, 'job')]);
    await within(run.output('got SIGTERM'), 2_000, 'SIGTERM after the loss');
    assert.equal(await within(run.done, 3_000, 'SIGKILL after the grace period'), 76);
    const events = run.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string });
    assert.deepEqual(
      events.map((e) => e.event),
      ['acquired', 'started', 'lost', 'exit'],
    );
    assert.equal((events[3] as unknown as { signal: string }).signal, 'SIGKILL');
  });

  test('run: a lease that lapsed before the command could start: the command never runs; exit 76', {
    skip:
      'bun' in process.versions
        ? 'the stall is preloaded with NODE_OPTIONS=--import, which Bun does not honour (the code under test is the same on every runtime)'
        : false,
  }, async () => {
    // Before the fix the lease's signal had aborted before `run` listened to it: the command ran
    // without the lock, and `run` never heard of the loss (CI: a --ttl 12 case left running).
    const prefix = uniquePrefix('cli');
    const marker = join(tmpdir(), `leasehold-not-started-${process.pid}-${prefix}`);
    const run = cli(
      prefix,
      [
        'run',
        'job',
        '--ttl',
        '12',
        '--json',
        '--',
        ...js(`require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`),
      ],
      { NODE_OPTIONS: `--import=${STALL}`, LEASEHOLD_TEST_STALL_MS: '60' },
    );
    assert.equal(await within(run.done, 15_000, 'run'), 76, run.stderr);
    const events = run.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; error?: string; pid?: number | null });
    assert.deepEqual(
      events.map((e) => e.event),
      ['acquired', 'lost', 'exit'],
    );
    assert.match(events[1]?.error ?? '', /validity ran out/);
    assert.equal(events[1]?.pid, null);
    assert.equal(existsSync(marker), false, 'the command ran without the lock');
  });

  test('run: SIGINT to leasehold reaches the command, and the lock is released', async () => {
    const prefix = uniquePrefix('cli');
    const graceful = `process.on('SIGINT', () => { console.log('got SIGINT'); process.exit(7); });
      console.log('ready'); setInterval(() => {}, 1000);`;
    const run = cli(prefix, ['run', 'job', '--', ...js(graceful)]);
    await run.output('ready');
    assert.equal(await held(prefix, 'job'), true);
    run.child.kill('SIGINT');
    assert.equal(await run.done, 7, run.stderr);
    assert.match(run.stdout, /got SIGINT/);
    assert.equal(await held(prefix, 'job'), false);
  });
  test('--help works for every command; bad usage exits 64; an unreachable Redis exits 69', async () => {
    for (const sub of ['run', 'status', 'release', 'watch', 'top', 'demo', 'bench']) {
      const help = spawn(NODE, [...CLI, sub, '--help'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      help.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      const [code] = await once(help, 'close');
      assert.equal(code, 0, `${sub} --help`);
      assert.match(out, /Usage|usage|help/, `${sub} --help prints usage`);
    }
    const bad = cli('x', ['run', 'job', '--ttl', 'soon', '--', 'true']);
    assert.equal(await bad.done, 64);
    const down = spawn(NODE, [...CLI, 'status', 'job', '--redis', 'redis://127.0.0.1:1'], {
      stdio: 'ignore',
    });
    const [code] = await once(down, 'close');
    assert.equal(code, 69);
  });
});
