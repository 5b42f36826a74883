// The least privileges leasehold needs (issue 22, item 7): the ACL line of docs/security.md, read
// from the page itself, runs every primitive with pushes, inspection and the CLI; a user without
// one command gets an error naming it (library: RedisCommandError; CLI: exit 77), and a user
// without CLIENT TRACKING falls back to polling and says so.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  Leasehold,
  NotificationsError,
  RedisCommandError,
  ScriptingUnavailableError,
} from '../../src/index.ts';
import { mutexKeys } from '../../src/primitives/mutex.ts';
import { leasehold } from '../harness/cli.ts';
import { exercise } from '../harness/exercise.ts';
import { mode, testDriver, testNotifications, useRedis, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

/** The `ACL SETUSER leasehold ...` line of docs/security.md, as arguments. */
function documentedRule(): string[] {
  const page = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
  const line = page.split('\n').find((l) => l.startsWith('ACL SETUSER leasehold '));
  assert.ok(line, 'docs/security.md has the ACL SETUSER line');
  return line.split(' ').slice(2);
}

const PASSWORD = 'acl-SECRET-pw';
/** The documented rule for user `name`, its password replaced, `edit` applied. */
function userRule(name: string, edit: (rules: string[]) => string[] = (r) => r): string[] {
  const [, ...rules] = documentedRule();
  const withPassword = rules.map((r) => (r.startsWith('>') ? `>${PASSWORD}` : r));
  return ['ACL', 'SETUSER', name, ...edit(withPassword)];
}
const without = (command: string) => (rules: string[]) => rules.filter((r) => r !== `+${command}`);

/** The monitoring-only user of docs/security.md: its commands, read from the page. */
function monitoringRule(name: string): string[] {
  const page = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
  const list = /A user for monitoring only .*? needs fewer commands: `([^`]+)`/.exec(page)?.[1];
  assert.ok(list, "docs/security.md lists the monitoring user's commands");
  return [
    'ACL',
    'SETUSER',
    name,
    'on',
    `>${PASSWORD}`,
    '~leasehold:*',
    'allchannels',
    '-@all',
    ...list.split(' '),
  ];
}

const redis = useRedis({
  prepare: async (server) => {
    await command(server.port, userRule('leasehold'));
    await command(server.port, userRule('noevalsha', without('evalsha')));
    await command(server.port, userRule('nozadd', without('zadd')));
    await command(server.port, userRule('notracking', without('client|tracking')));
    await command(server.port, monitoringRule('monitor'));
    await command(
      server.port,
      userRule('otherkeys', (rules) => rules.map((r) => (r === '~leasehold:*' ? '~other:*' : r))),
    );
  },
});

const url = (user: string) => `redis://${user}:${PASSWORD}@127.0.0.1:${redis.server.port}`;
/** The documented prefix: the rule's key pattern is `~leasehold:*`. */
const connect = (user: string, notifications: 'auto' | 'tracking' | 'polling' = testNotifications) =>
  Leasehold.connect({ url: url(user), driver: testDriver, notifications, retryDelay: 20 });
const cli = (user: string, args: string[], until?: string) =>
  leasehold([...args, '--redis', url(user), '--driver', testDriver], until === undefined ? {} : { until });

describe(`least-privilege ACL users (${mode})`, () => {
  test('the user of docs/security.md: every primitive, contention, pushes, inspection', async () => {
    const [a, b] = await Promise.all([connect('leasehold'), connect('leasehold')]);
    try {
      assert.equal(a.notifications, testNotifications);
      await exercise(a, b);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('the monitoring user of docs/security.md runs status on a holder that waited', async () => {
    const [a, b] = await Promise.all([connect('leasehold'), connect('leasehold')]);
    try {
      const first = await a.acquire('watched', { ttl: 30_000 });
      const next = b.acquire('watched', { owner: 'waited', ttl: 30_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await first.release();
      const lease = await next;
      // Its grant note goes out 50 ms after the grant: status reads it with inspect-granted.lua.
      let out = await cli('monitor', ['status', 'watched']);
      for (let i = 0; i < 50 && !/asked/.test(out.stdout); i++)
        out = await cli('monitor', ['status', 'watched']);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /waited: .*granted .*, asked /);
      await lease.release();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('the same user runs the CLI: status, top, watch, doctor, release --force', async () => {
    const lh = await connect('leasehold');
    const lease = await lh.acquire('cli-job', { owner: 'acl-holder', ttl: 30_000 });
    try {
      const status = await cli('leasehold', ['status', 'cli-job']);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /holder +acl-holder: fencing token/);
      // On GLIDE every tool polls (no pushes), and says so; doctor then exits 78.
      const expected = testDriver === 'glide' ? 'polling' : 'tracking';
      assert.match(status.stdout, new RegExp(`notify +${expected}`));
      const top = await cli('leasehold', ['top', 'cli-', '--json'], '"event":"ready"');
      assert.match(top.stdout, new RegExp(`"event":"ready","mode":"${expected}","names":1`));
      const watch = await cli('leasehold', ['watch', 'cli-job', '--json'], '"event":"held"');
      assert.match(watch.stdout, /"owner":"acl-holder"/);
      const doctor = await cli('leasehold', ['doctor', '--json']);
      assert.equal(doctor.code, testDriver === 'glide' ? 78 : 0, doctor.stdout + doctor.stderr);
      const release = await cli('leasehold', ['release', '--force', 'cli-job']);
      assert.equal(release.code, 0, release.stderr);
      assert.equal(await lease.release(), false, 'the force-release took it');
      for (const out of [status, top, watch, doctor, release]) {
        assert.doesNotMatch(out.stdout + out.stderr, /SECRET/);
      }
    } finally {
      await lh.close();
    }
  });

  test('a user whose ACL lacks the grant channel gets direct grants once an operator adds it', {
    skip:
      testDriver === 'glide'
        ? "GLIDE subscribes on its Watch connection, not the clients' subscribeOn"
        : false,
  }, async () => {
    const port = redis.server.port;
    await command(
      port,
      userRule('latechannels', (rules) => rules.filter((r) => r !== '&leasehold:grants:*')),
    );
    const [holder, waiter] = await Promise.all([connect('latechannels'), connect('latechannels')]);
    const registered = async () =>
      Number(await command(port, ['ZCARD', mutexKeys('leasehold', 'late').waiters]));
    try {
      const first = await holder.acquire('late', { ttl: 30_000 });
      const next = waiter.acquire('late', { ttl: 30_000 });
      // The grant subscription is refused (NOPERM): the waiter's attempts register nothing.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(await registered(), 0);
      await command(port, ['ACL', 'SETUSER', 'latechannels', '&leasehold:grants:*']);
      // The refused SUBSCRIBE goes again after a pause (1 s the first time); once it is up, the
      // waiter attempts with a ticket and registers. Before, a first SUBSCRIBE that failed was
      // never sent again: no direct grants for the rest of the instance's life.
      await until('the waiter registered for a grant', async () => (await registered()) === 1, {
        timeout: 5_000,
      });
      await first.release();
      const lease = await within(next, 2_000, "the waiter's grant");
      assert.equal(await registered(), 0);
      await lease.release();
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });

  test('without EVALSHA: connect() rejects with ScriptingUnavailableError and the CLI exits 77, each naming it', async () => {
    // Every operation is a script: connect() finds out (issue 41, item 6), not the first acquire.
    const error = await connect('noevalsha', 'auto').then(
      async (lh) => {
        await lh.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    assert.ok(error instanceof ScriptingUnavailableError, String(error));
    assert.match(error.message, /'evalsha' command/);
    assert.match(error.message, /\+evalsha .*docs\/security\.md/);
    const status = await cli('noevalsha', ['status', 'job']);
    assert.equal(status.code, 77, status.stderr);
    assert.match(status.stderr, /'evalsha' command.*https:\/\/\S+\/docs\/security\.md/);
    assert.doesNotMatch(status.stderr, /SECRET/);
  });

  test('without a command a script calls (ZADD): the error names it, even on Redis 7.0', async () => {
    const lh = await connect('nozadd', 'auto');
    try {
      const error = await lh
        .semaphore('uploads', { limit: 2 })
        .acquire({ timeout: 1_000 })
        .catch((e: unknown) => e);
      assert.ok(error instanceof RedisCommandError, String(error));
      assert.match(error.message, /lacks \+zadd/);
    } finally {
      await lh.close();
    }
  });

  test('keys outside the user patterns: the error says which patterns must cover', async () => {
    const lh = await connect('otherkeys', 'auto');
    try {
      const error = await lh.acquire('job', { timeout: 1_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof RedisCommandError, String(error));
      assert.match(error.message, /key and channel patterns must cover leasehold's keys/);
    } finally {
      await lh.close();
    }
  });

  test('without CLIENT TRACKING: polling, and every tool says why', {
    skip: testDriver === 'glide' ? 'GLIDE sends no CLIENT TRACKING: it polls whatever the ACL allows' : false,
  }, async () => {
    const lh = await connect('notracking', 'auto');
    const other = await connect('notracking', 'auto');
    try {
      assert.equal(lh.notifications, 'polling');
      assert.match(lh.stats.notificationsReason ?? '', /CLIENT TRACKING refused: NOPERM/);
      await exercise(lh, other);
    } finally {
      await Promise.all([lh.close(), other.close()]);
    }
    const refused = await connect('notracking', 'tracking').catch((e: unknown) => e);
    assert.ok(refused instanceof NotificationsError, String(refused));
    assert.match(refused.message, /CLIENT TRACKING refused/);

    const status = await cli('notracking', ['status', 'job']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /notify +polling \(CLIENT TRACKING refused: NOPERM/);
    const watch = await cli('notracking', ['watch', 'job'], 'polling every');
    assert.match(watch.stdout, /polling every 1000 ms: CLIENT TRACKING refused: NOPERM/);
  });
});
