// The operator's tools keep secrets and fail cleanly (issue 22, item 7): status, doctor, top and
// watch printed the Redis password from the URL in their errors ("could not connect to Redis at
// redis://alice:wrong-pw@..."), and `dashboard` on a port in use exited 70 with a stack trace.
// Every subcommand, text and --json, right and wrong password: neither stdout nor stderr may
// hold the password. The dashboard listens on 127.0.0.1 only, and a taken port is one line, exit 73.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';
import { describe, test } from 'node:test';
import { CLI, type CliOutcome, leasehold } from '../harness/cli.ts';
import { mode, testDriver, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { freePort } from '../harness/ports.ts';
import { reapOnExit } from '../harness/reaper.ts';
import { command } from '../harness/resp.ts';

// "@" and "/" in the password: the old redaction ("//[^@/]*@") stopped at the first of them.
const PASSWORD = 'p@ss/w0rd-SECRET';
const ENCODED = encodeURIComponent(PASSWORD);
const WRONG = 'wr0ng-SECRET';

const redis = useRedis({
  prepare: (server) =>
    command(server.port, ['ACL', 'SETUSER', 'someone', 'on', `>${PASSWORD}`, '~*', '&*', '+@all']),
});

const right = () => `redis://someone:${ENCODED}@127.0.0.1:${redis.server.port}`;
const wrong = () => `redis://someone:${WRONG}@127.0.0.1:${redis.server.port}`;

/** No trace of either password, in any spelling, in anything the command wrote. */
function clean(what: string, out: CliOutcome): void {
  const all = out.stdout + out.stderr;
  for (const secret of ['SECRET', 'w0rd', 'wr0ng', ENCODED]) {
    assert.ok(!all.includes(secret), `${what} printed "${secret}":\n${all}`);
  }
}

/** Each subcommand as it runs to completion (or, for the live views, until its first output). */
const SUBCOMMANDS: { args: string[]; until?: string; untilJson?: string }[] = [
  { args: ['run', 'run-job', '--', process.execPath, '-e', ''] },
  { args: ['status', 'job'] },
  { args: ['release', '--force', 'released-job'] },
  { args: ['watch', 'job'], until: 'free', untilJson: '"event":"free"' },
  { args: ['top'], until: 'leasehold top', untilJson: '"event":"ready"' },
  { args: ['dashboard', '--port', '0'], until: 'leasehold dashboard:', untilJson: '"event":"listening"' },
  { args: ['doctor'] },
];

/** Runs `jobs` at most `width` at a time (each is a Node process on a 2-core machine). */
async function pooled<T>(jobs: (() => Promise<T>)[], width = 3): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        results[i] = await (jobs[i] as () => Promise<T>)();
      }
    }),
  );
  return results;
}

describe(`no password in any output of any subcommand (${mode})`, () => {
  for (const json of [false, true]) {
    test(`the right password${json ? ', --json' : ''}: every subcommand works and prints none of it`, async () => {
      const prefix = uniquePrefix('secret');
      await pooled(
        SUBCOMMANDS.map(({ args, until, untilJson }) => async () => {
          const [sub, ...rest] = args;
          // Before the rest: run takes its command after --.
          const flags = [
            '--redis',
            right(),
            '--prefix',
            prefix,
            '--driver',
            testDriver,
            ...(json ? ['--json'] : []),
          ];
          const full = [sub!, ...flags, ...rest];
          const stop = json ? untilJson : until;
          const out = await leasehold(full, stop === undefined ? {} : { until: stop });
          // doctor exits 78 where instances would poll, as they do on GLIDE.
          const expected = sub === 'doctor' && testDriver === 'glide' ? 78 : 0;
          assert.equal(out.code, expected, `${args.join(' ')}: ${out.stderr}`);
          clean(args.join(' '), out);
        }),
      );
    });

    test(`a wrong password${json ? ', --json' : ''}: every subcommand exits 77 saying WRONGPASS, and no password`, async () => {
      await pooled(
        SUBCOMMANDS.map(({ args }) => async () => {
          const [sub, ...rest] = args;
          const full = [
            sub!,
            '--redis',
            wrong(),
            '--driver',
            testDriver,
            ...(json ? ['--json'] : []),
            ...rest,
          ];
          const out = await leasehold(full);
          assert.equal(out.code, 77, `${args.join(' ')}: ${out.stderr}`);
          assert.match(
            out.stderr,
            /^leasehold \w+: could not connect to Redis at redis:\/\/\*\*\*@127\.0\.0\.1:\d+: WRONGPASS/,
          );
          assert.equal(out.stderr.split('\n').length, 2, `one line: ${out.stderr}`);
          clean(args.join(' '), out);
        }),
      );
    });
  }

  test('from $REDIS_URL, with "@" unencoded, unreachable, or malformed: still no password', async () => {
    const closed = await freePort();
    const cases: [string[], NodeJS.ProcessEnv, number][] = [
      [['status', 'job'], { REDIS_URL: wrong() }, 77],
      [['status', 'job', '--redis', `redis://someone:wr@ng-SECRET@127.0.0.1:${redis.server.port}`], {}, 77],
      [['status', 'job', '--redis', `redis://someone:${WRONG}@127.0.0.1:${closed}`], {}, 69],
      [['doctor', '--redis', `redis://someone:${WRONG}@127.0.0.1:99999`], {}, 64],
      [['top', '--redis', `http://someone:${WRONG}@127.0.0.1:1`], {}, 64],
      [['run', 'job', '--redis', `redis://someone:${WRONG}@127.0.0.1:${closed}`, '--', 'true'], {}, 69],
    ];
    await pooled(
      cases.map(([args, env, code]) => async () => {
        const [sub, ...rest] = args;
        const out = await leasehold([sub!, '--driver', testDriver, ...rest], { env });
        assert.equal(out.code, code, `${args.join(' ')}: ${out.stderr}`);
        clean(args.join(' '), out);
      }),
    );
  });
});

/** Starts `leasehold dashboard` on a free port; resolves with its URL once it listens. */
async function startDashboard(): Promise<{ child: ChildProcess; url: URL }> {
  const child = spawn(
    process.execPath,
    [...CLI, 'dashboard', '--port', '0', '--redis', right(), '--driver', testDriver],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  reapOnExit(child);
  let out = '';
  const url = await within(
    new Promise<string>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const found = /leasehold dashboard: (http:\/\/\S+)/.exec(out)?.[1];
        if (found !== undefined) resolve(found);
      });
      child.once('exit', (code) => reject(new Error(`dashboard exited with ${code}: ${out}`)));
    }),
    30_000,
    'the dashboard listens',
  );
  return { child, url: new URL(url) };
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the dashboard', () => {
  test('listens on 127.0.0.1 only by default; its page and events carry no password', async () => {
    const { child, url } = await startDashboard();
    try {
      assert.equal(url.hostname, '127.0.0.1');
      const port = Number(url.port);
      assert.equal(await accepts('127.0.0.1', port), true);
      // Another loopback address reaches a socket bound to 0.0.0.0, not one bound to 127.0.0.1.
      assert.equal(await accepts('127.0.0.2', port), false, 'not listening beyond 127.0.0.1');
      const page = await (await fetch(url)).text();
      assert.match(page, /leasehold/);
      const events = await fetch(new URL('/events', url));
      const reader = events.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      assert.match(first, /^event: hello/);
      for (const text of [page, first]) {
        assert.doesNotMatch(text, /SECRET|w0rd|someone/, 'neither the password nor the URL is served');
      }
    } finally {
      child.kill('SIGINT');
      await once(child, 'exit');
    }
  });

  test('a port in use: one line on stderr, nothing on stdout, exit 73; --help says so', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const out = await leasehold([
        'dashboard',
        '--port',
        String(port),
        '--redis',
        right(),
        '--driver',
        testDriver,
      ]);
      assert.equal(out.code, 73, out.stderr);
      assert.equal(
        out.stderr,
        `leasehold dashboard: cannot listen on 127.0.0.1:${port}: the port is in use (another dashboard?); pick another with --port, or --port 0 for a free one\n`,
      );
      assert.equal(out.stdout, '');
    } finally {
      taken.close();
    }
    const help = await leasehold(['dashboard', '--help']);
    assert.match(help.stdout, /a port in use\s+exits 73/);
  });
});
