// Issue 41, item 6: a server that cannot run scripts. Valkey 9.1 builds Lua as a module an operator
// can leave out, and some ACL policies deny EVAL/EVALSHA; every leasehold operation is a script.
// Against real servers: one whose EVAL and EVALSHA are renamed away (what a server without its Lua
// module answers: "unknown command"), and an ACL user denied them. connect() rejects with
// ScriptingUnavailableError saying which case and what to do, in either notification mode, and
// `leasehold doctor` says so and exits 78. Before, connect() succeeded (polling) and the first
// acquire failed with a RedisCommandError quoting the server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Leasehold, ScriptingUnavailableError } from '../../src/index.ts';
import { CLI } from '../harness/cli.ts';
import { testDriver, uniquePrefix } from '../harness/leasehold.ts';
import { startServer } from '../harness/masters.ts';
import type { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

let noLua: RedisServer;
let denied: RedisServer;
before(async () => {
  noLua = await startServer({ args: ['--rename-command', 'EVAL', '', '--rename-command', 'EVALSHA', ''] });
  denied = await startServer();
  await command(denied.port, [
    'ACL',
    'SETUSER',
    'app',
    'on',
    '>pw',
    '~*',
    '&*',
    '+@all',
    '-eval',
    '-evalsha',
    '-script',
  ]);
});
after(async () => {
  await noLua?.stop();
  await denied?.stop();
});

/** Connects as a user would; resolves with what connect() rejected with. */
async function refusal(url: string, notifications: 'auto' | 'polling'): Promise<unknown> {
  const lh = await Leasehold.connect({
    url,
    driver: testDriver,
    notifications,
    prefix: uniquePrefix('noscript'),
  }).catch((error: unknown) => error);
  if (lh instanceof Leasehold) {
    await lh.close();
    return undefined;
  }
  return lh;
}

async function doctor(url: string): Promise<{ code: number; stdout: string }> {
  const args = [...CLI, 'doctor', '--redis', url, '--driver', testDriver];
  return promisify(execFile)(process.execPath, args).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
}

describe('a server that cannot run scripts', () => {
  for (const notifications of ['auto', 'polling'] as const) {
    test(`no Lua (EVAL and EVALSHA unknown): connect() rejects saying so (notifications ${notifications})`, async () => {
      const error = await refusal(noLua.url, notifications);
      assert.ok(error instanceof ScriptingUnavailableError, `rejected with ${String(error)}`);
      assert.equal(error.code, 'LEASEHOLD_ERR_NO_SCRIPTING');
      assert.match(error.message, /cannot run Lua scripts/);
      assert.match(error.message, /unknown command/i);
      assert.match(error.message, /Lua module/);
    });

    test(`an ACL that denies EVAL: connect() rejects naming the permissions (notifications ${notifications})`, async () => {
      const error = await refusal(`redis://app:pw@127.0.0.1:${denied.port}`, notifications);
      assert.ok(error instanceof ScriptingUnavailableError, `rejected with ${String(error)}`);
      assert.match(error.message, /ACL user may not run scripts/);
      assert.match(error.message, /\+eval \+evalsha/);
    });
  }

  test('a server that can: connect() succeeds, with one read-only script when polling', async () => {
    const lh = await Leasehold.connect({ url: denied.url, driver: testDriver, notifications: 'polling' });
    await lh.close();
  });

  test('leasehold doctor says so and exits 78', async () => {
    const { code, stdout } = await doctor(noLua.url);
    assert.equal(code, 78, stdout);
    assert.match(stdout, /scripting {6}unavailable: the server cannot run Lua scripts/);
    const acl = await doctor(`redis://app:pw@127.0.0.1:${denied.port}`);
    assert.equal(acl.code, 78, acl.stdout);
    assert.match(acl.stdout, /scripting {6}unavailable: the ACL user may not run scripts/);
  });
});
