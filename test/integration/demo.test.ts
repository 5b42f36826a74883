// `npm run demo` as a new user meets it (issue 23, item 6): on a server named by REDIS_URL it
// runs to the end and leaves no key behind; with no redis-server anywhere and no REDIS_URL it
// says in one line what to do and exits non-zero, without touching a Redis it did not start.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

const DEMO = new URL('../../src/demo/main.ts', import.meta.url).pathname;

function demo(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', DEMO], {
    env: { ...process.env, REDIS_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('demo', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });

  test('on REDIS_URL: runs to the end (exit 0), then that server holds no key of it', async () => {
    const run = await demo({ REDIS_URL: server.url });
    assert.equal(run.code, 0, run.stderr + run.stdout);
    assert.match(run.stdout, /strictly increasing: true/);
    assert.equal(await command(server.port, ['DBSIZE']), 0, 'keys left behind');
  });

  test('no redis-server on PATH or in LEASEHOLD_SERVERS_DIR, no REDIS_URL: one line, exit 69', async () => {
    // A PATH holding only this node: no redis-server, whatever the machine has installed.
    const bin = await mkdtemp(join(tmpdir(), 'leasehold-demo-'));
    try {
      await symlink(process.execPath, join(bin, 'node'));
      const run = await demo({ PATH: bin, LEASEHOLD_SERVERS_DIR: join(bin, 'none') });
      assert.equal(run.code, 69, run.stderr + run.stdout);
      assert.equal(run.stdout, '');
      const lines = run.stderr.trim().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(lines[0]!, /no redis-server found: install one .*REDIS_URL/);
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
