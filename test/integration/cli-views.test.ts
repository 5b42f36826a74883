// The `leasehold` commands that show a lock from outside (status, watch, top, the dashboard) and
// release --force, end to end: real CLI processes (run from source through tsx) against a
// redis-server this file starts, with `run` or the library holding the locks they show.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Leasehold } from '../../src/index.ts';
import { type CliProcess, HOLDER, js, startCli, tokenOf } from '../harness/cli-process.ts';
import { aborted, lockKey, testDriver, uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

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

describe('leasehold CLI', () => {
  test('status and release --force against a held lock; --json output parses', async () => {
    const prefix = uniquePrefix('cli');
    const holder = cli(prefix, ['run', 'job', '--ttl', '5000', '--', ...js(HOLDER)]);
    await holder.output('ready token=');

    const status = cli(prefix, ['status', 'job', '--json']);
    assert.equal(await status.done, 0, status.stderr);
    const report = JSON.parse(status.stdout) as {
      held: boolean;
      primitives: {
        primitive: string;
        holders: { ttlLeft: number; fencingToken: string; token: string; owner: string }[];
      }[];
    };
    assert.equal(report.held, true);
    assert.equal(report.primitives[0]?.primitive, 'mutex');
    const state = report.primitives[0]!.holders[0]!;
    assert.match(state.owner, /^[^:]+:\d+:leasehold run /, 'run stamps its command as the owner');
    assert.equal(BigInt(state.fencingToken), tokenOf(holder));
    assert.ok(state.ttlLeft > 0 && state.ttlLeft <= 5_000, `ttl ${state.ttlLeft}`);
    assert.ok(
      String(await command(server.port, ['GET', lockKey(prefix, 'job')])).startsWith(`${state.token}~`),
    );

    const human = cli(prefix, ['status', 'job']);
    assert.equal(await human.done, 0);
    assert.match(human.stdout, /^mutex .*\n {2}state +held$/m);

    const refused = cli(prefix, ['release', 'job']);
    assert.equal(await refused.done, 64, 'release without --force is a usage error');

    const release = cli(prefix, ['release', '--force', 'job', '--json']);
    assert.equal(await release.done, 0, release.stderr);
    const freed = JSON.parse(release.stdout) as Record<string, unknown>;
    assert.deepEqual(
      { name: freed['name'], primitive: freed['primitive'], key: freed['key'], released: freed['released'] },
      { name: 'job', primitive: 'mutex', key: lockKey(prefix, 'job'), released: true },
    );
    assert.equal(freed['lastFencingToken'], String(tokenOf(holder)));
    // The holder learns of the takeover and its command is terminated (HOLDER exits on SIGTERM).
    assert.equal(await holder.done, 76);

    const after = cli(prefix, ['status', 'job', '--json']);
    assert.equal(await after.done, 0);
    assert.equal((JSON.parse(after.stdout) as { held: boolean }).held, false);
  });

  test('watch prints acquisitions and releases as they happen', async () => {
    const prefix = uniquePrefix('cli');
    const watch = cli(prefix, ['watch', 'job', '--json']);
    await watch.output('"event":"free"');
    const run = cli(prefix, ['run', 'job', '--', ...js(HOLDER)]);
    await within(watch.output('"event":"acquired"'), 5_000, 'watch saw the acquisition');
    run.child.stdin?.end();
    assert.equal(await run.done, 0);
    await within(watch.output('"event":"released"'), 5_000, 'watch saw the release');
    await within(watch.output('"event":"free"', 2), 5_000, 'watch saw the name free again');
    watch.child.kill('SIGINT');
    assert.equal(await watch.done, 0);
    const events = watch.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { event: string }).event)
      // On GLIDE the view polls, and says so first (no pushes: docs/compatibility.md).
      .filter((event) => !(testDriver === 'glide' && event === 'polling'));
    assert.deepEqual(events, ['free', 'acquired', 'released', 'free']);
  });

  test("watch follows every primitive: a semaphore's permits and an election's leader, each change", async () => {
    const prefix = uniquePrefix('cli');
    const lh = await Leasehold.connect({ url: server.url, prefix, driver: testDriver });
    try {
      const sem = lh.semaphore('pool', { limit: 3 });
      const first = await sem.acquire({ permits: 2, owner: 'first' });
      const watch = cli(prefix, ['watch', 'pool', '--json']);
      await within(watch.output('"event":"held"'), 10_000, 'watch shows the permits held');
      const second = await sem.acquire({ owner: 'second' });
      await within(watch.output('"owner":"second"'), 5_000, 'watch saw the second holder');
      const forced = cli(prefix, ['release', '--force', 'pool']);
      assert.equal(await forced.done, 0, forced.stderr);
      await within(watch.output('"event":"free"'), 5_000, 'watch saw the permits freed');
      watch.child.kill('SIGINT');
      assert.equal(await watch.done, 0);
      const events = watch.stdout
        .trim()
        .split('\n')
        .map(
          (line) =>
            JSON.parse(line) as { event: string; primitive?: string; holders?: { permits?: number }[] },
        )
        .filter((e) => e.event !== 'polling');
      assert.equal(events[0]?.event, 'held');
      assert.equal(events[0]?.primitive, 'semaphore');
      assert.equal(events[0]?.holders?.[0]?.permits, 2);
      assert.ok(
        events.some((e) => e.event === 'changed'),
        'a change of holders is a line',
      );
      await Promise.all([first.release(), second.release()].map((p) => p.catch(() => false)));

      const human = cli(prefix, ['watch', 'scheduler']);
      await within(human.output('free: nobody holds or waits'), 10_000, 'an unknown name is said to be free');
      const term = await lh.election('scheduler').campaign('node-a', { owner: 'leader-a' });
      await within(human.output('election "scheduler"  acquired by leader-a'), 5_000, 'the new leader');
      await term.resign();
      await within(human.output('released was leader-a'), 5_000, 'the term ended');
      human.child.kill('SIGINT');
      assert.equal(await human.done, 0);
    } finally {
      await lh.close();
    }
  });

  test('top into a pipe writes one plain line per change, no screen redraws', async () => {
    const prefix = uniquePrefix('cli');
    const lh = await Leasehold.connect({ url: server.url, prefix, driver: testDriver });
    try {
      const first = await lh.acquire('piped', { owner: 'first' });
      const top = cli(prefix, ['top']);
      await within(top.output('mutex "piped"  held: first'), 10_000, 'the state at start as a line');
      await first.release();
      await within(top.output('released was first'), 5_000, 'the release as a line');
      const second = await lh.acquire('piped', { owner: 'second' });
      await within(top.output('acquired by second'), 5_000, 'the acquisition as a line');
      await second.release();
      top.child.kill('SIGINT');
      assert.equal(await top.done, 0);
      assert.ok(!top.stdout.includes('\u001b['), 'no terminal control sequences in a pipe');
      assert.match(top.stdout.split('\n')[0] ?? '', /leasehold top {2}\(every name\) {2}1 name$/);
    } finally {
      await lh.close();
    }
  });

  test('top --json: takeovers within a second from pushes; no Redis command while nothing changes', {
    skip:
      testDriver === 'glide'
        ? 'on GLIDE top polls: no pushes (docs/compatibility.md, "Valkey GLIDE")'
        : false,
  }, async () => {
    const prefix = uniquePrefix('cli');
    const connect = (owner: string) =>
      Leasehold.connect({ url: server.url, driver: testDriver, prefix, ttl: 30_000, owner });
    const [alpha, beta] = await Promise.all([connect('alpha'), connect('beta')]);
    const early = await alpha.acquire('job:early');
    const top = cli(prefix, ['top', 'job:', '--json']);
    try {
      await within(top.output('"event":"ready"'), 10_000, 'top started');
      const lines = () =>
        top.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(lines().some((l) => l['event'] === 'entry' && l['name'] === 'job:early'));

      let at = Date.now();
      const taken = await alpha.acquire('job:a');
      await within(top.output('"owner":"alpha"'), 5_000, 'top saw the acquisition');
      const seen = (type: string, name: string) =>
        lines().find((l) => l['event'] === type && l['name'] === name);
      await until('top printed the acquisition', async () => seen('acquired', 'job:a'), { timeout: 2_000 });
      assert.ok(Date.now() - at < 1_000, `acquisition shown after ${Date.now() - at} ms`);

      at = Date.now();
      await beta.forceAcquire('job:a');
      await within(top.output('"event":"handoff"'), 2_000, 'top saw the takeover');
      assert.ok(Date.now() - at < 1_000, `takeover shown after ${Date.now() - at} ms`);
      const handoff = seen('handoff', 'job:a');
      assert.equal(handoff?.['owner'], 'beta');
      assert.equal(handoff?.['previousOwner'], 'alpha');

      // Quiet: nobody writes (extensions are 10 s apart), so top sends nothing at all. The
      // window opens once the takeover's own reactions are over: alpha's check of its lease
      // (an extend script that finds beta's token) and top's second read when the fence
      // counter's push came in a later socket read than the lock key's. Either ran inside the
      // window once in a CI run (2 commands, on a loaded machine).
      assert.ok((await within(aborted(taken.signal), 2_000, 'alpha heard of the takeover')) instanceof Error);
      await new Promise((r) => setTimeout(r, 200));
      const processed = async () =>
        Number(
          /total_commands_processed:(\d+)/.exec(String(await command(server.port, ['INFO', 'stats'])))?.[1],
        );
      const before = await processed();
      await new Promise((r) => setTimeout(r, 1_500));
      const ran = (await processed()) - before;
      // On a failure, who sent what: the last command of every connection.
      const clients = ran === 1 ? '' : String(await command(server.port, ['CLIENT', 'LIST']));
      assert.equal(ran, 1, `only the INFO of this check ran; clients:\n${clients}`);

      await early.release();
      await within(top.output('"event":"released"'), 2_000, 'top saw the release');
      top.child.kill('SIGINT');
      assert.equal(await top.done, 0);
    } finally {
      // A failed check must not leave top running: its pipes would keep this file alive.
      if (top.child.exitCode === null) top.child.kill('SIGKILL');
      await Promise.all([alpha.close(), beta.close()]);
    }
  });

  test('top and the dashboard show only live names, not names whose fencing counter outlived them', async () => {
    const prefix = uniquePrefix('cli');
    const lh = await Leasehold.connect({ url: server.url, driver: testDriver, prefix, ttl: 30_000 });
    await (await lh.acquire('job:idle')).release();
    const held = await lh.acquire('job:held');
    const top = cli(prefix, ['top', 'job:', '--json']);
    const dashboard = cli(prefix, ['dashboard', 'job:', '--port', '0', '--json']);
    try {
      await within(top.output('"event":"ready"'), 10_000, 'top started');
      const lines = top.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      // A name is printed again each time it is read (a reconnect or a flush reads every name).
      assert.deepEqual(
        [...new Set(lines.filter((l) => l['event'] === 'entry').map((l) => l['name']))],
        ['job:held'],
      );
      assert.equal(lines.find((l) => l['event'] === 'ready')?.['names'], 1);

      await within(dashboard.output('"event":"listening"'), 10_000, 'the dashboard started');
      const { url } = JSON.parse(dashboard.stdout.trim().split('\n')[0] ?? '{}') as { url: string };
      // A page that connects gets every shown name, then the timeline (job:held's acquisition).
      const events = await fetch(new URL('/events', url));
      const reader = (events.body as ReadableStream<Uint8Array>).getReader();
      let stream = '';
      while (!stream.includes('event: timeline')) {
        const { value, done } = await within(reader.read(), 5_000, 'the event stream');
        if (done) break;
        stream += Buffer.from(value).toString();
      }
      await reader.cancel();
      const shown = [...stream.matchAll(/event: entry\ndata: (.*)\n/g)].map(
        ([, data]) => (JSON.parse(data ?? '{}') as { name: string }).name,
      );
      assert.deepEqual(shown, ['job:held']);
      await held.release();
      top.child.kill('SIGINT');
      dashboard.child.kill('SIGINT');
      assert.equal(await top.done, 0);
      assert.equal(await dashboard.done, 0);
    } finally {
      for (const { child } of [top, dashboard]) if (child.exitCode === null) child.kill('SIGKILL');
      await lh.close();
    }
  });
});
