// The command line on PostgreSQL (docs/postgres.md, docs/cli.md): `migrate`, and `run`, `status`,
// `release --force` and `top` with --postgres, as a user runs them: two `run` processes hand the
// lock over, a forced release is heard by the holder at once, `top` follows it live.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { CLI, leasehold } from '../harness/cli.ts';
import { HOLDER, js, tokenOf } from '../harness/cli-process.ts';
import { uniquePrefix, within } from '../harness/leasehold.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { reapOnExit } from '../harness/reaper.ts';

let db: PgDatabase;
before(async () => {
  db = await PgDatabase.create();
});
const children: import('node:child_process').ChildProcess[] = [];
after(async () => {
  // A failed test leaves its processes running: stop them before the database goes.
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await db.drop();
});

/** `leasehold <args> --postgres <db>` kept running, its output as it comes. */
function start(args: string[]) {
  const child = spawn(process.execPath, [...CLI, args[0]!, '--postgres', db.url, ...args.slice(1)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  reapOnExit(child);
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => {
    out.stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    out.stderr += c.toString();
  });
  const done = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
  const printed = async (text: string) => {
    const deadline = performance.now() + 15_000;
    while (!out.stdout.includes(text) && !out.stderr.includes(text)) {
      if (performance.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`not printed within 15 s: ${text}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return { child, out, done, printed };
}

describe('leasehold CLI on PostgreSQL', () => {
  test('migrate: --print shows the SQL; a run creates the table once, a second finds it', async () => {
    const printed = await leasehold(['migrate', '--postgres', db.url, '--schema', 'ops', '--print']);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /CREATE TABLE IF NOT EXISTS "ops"\."leasehold_keys"/);
    const first = await leasehold(['migrate', '--postgres', db.url, '--schema', 'ops', '--json']);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(JSON.parse(first.stdout).created, true);
    const again = await leasehold(['migrate', '--postgres', db.url, '--schema', 'ops', '--json']);
    assert.equal(JSON.parse(again.stdout).created, false);
    const bad = await leasehold(['migrate', '--postgres', 'redis://x']);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /--postgres must be a postgres:\/\//);
    const secret = await leasehold(['migrate', '--postgres', 'postgres://u:hunter2@127.0.0.1:1/x']);
    assert.equal(secret.code, 69);
    assert.doesNotMatch(secret.stdout + secret.stderr, /hunter2/);
  });

  test('two `run` processes hand the lock over; status shows the holder; a forced release aborts it by push; top follows', async () => {
    const prefix = uniquePrefix('pgcli');
    // The views never create the table (they are read-only): an application or `migrate` does.
    const view = await leasehold(['top', '--postgres', db.url, '--json']);
    assert.equal(view.code, 69);
    assert.match(view.stderr, /leasehold migrate/);
    assert.equal((await leasehold(['migrate', '--postgres', db.url])).code, 0);
    const top = start(['top', '--prefix', prefix, '--json']);
    await top.printed('"event":"ready"');
    // A 60 s TTL: a holder renews every 20 s, so a holder that stops within 15 s of a forced
    // release heard of it by push, not at a renewal, however slow a loaded machine makes the
    // processes involved (a 10 s TTL renewed at 3.3 s, and the bound left no room between the two).
    const first = start(['run', 'job', '--prefix', prefix, '--ttl', '60s', '--', ...js(HOLDER)]);
    await first.printed('ready token=');
    const second = start(['run', 'job', '--prefix', prefix, '--ttl', '60s', '--', ...js(HOLDER)]);
    await new Promise((r) => setTimeout(r, 300));
    assert.doesNotMatch(second.out.stdout, /ready token=/, 'the second waits');
    const status = await leasehold(['status', 'job', '--postgres', db.url, '--prefix', prefix, '--json']);
    assert.equal(status.code, 0, status.stderr);
    const seen = JSON.parse(status.stdout);
    assert.equal(seen.held, true);
    assert.match(seen.notifications, /^tracking/);
    // The first holder's command ends: its lock goes to the waiting process.
    first.child.stdin.end();
    assert.equal(await first.done, 0);
    await second.printed('ready token=');
    const t1 = tokenOf({ stdout: first.out.stdout } as never);
    const t2 = tokenOf({ stdout: second.out.stdout } as never);
    assert.ok(t2 > t1, `${t2} > ${t1}`);
    // A forced release: the holder hears of it by push and stops its command (exit 76).
    const started = performance.now();
    const released = await leasehold(['release', '--force', 'job', '--postgres', db.url, '--prefix', prefix]);
    assert.equal(released.code, 0, released.stderr);
    assert.equal(await within(second.done, 15_000, 'holder stopped'), 76);
    const heard = performance.now() - started;
    assert.ok(heard < 15_000, `heard by push within ${Math.round(heard)} ms, not at a renewal (20 s)`);
    await top.printed('"event":"released"');
    top.child.kill('SIGINT');
    await top.done;
    assert.match(top.out.stdout, /"event":"acquired"/);
  });
});
