// `leasehold dashboard` as a person uses it: the CLI serves the page against a real Redis, worker
// processes hold and contend for locks, and a real headless Chromium (Debian's, driven by
// playwright-core) watches a takeover appear without a reload. The screenshot in
// docs/dashboard.md is the one this test saves with LEASEHOLD_SCREENSHOT=docs/dashboard.png; other
// runs save it in the temp directory, so that running the suite leaves the checkout unchanged.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Leasehold } from '../../src/index.ts';
import { CLI } from '../harness/cli.ts';
import { uniquePrefix } from '../harness/leasehold.ts';
import { startMasters } from '../harness/masters.ts';
import { reapOnExit } from '../harness/reaper.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

const WORKER = new URL('./workers/dashboard-worker.ts', import.meta.url).pathname;
const SCREENSHOT =
  process.env['LEASEHOLD_SCREENSHOT'] ?? join(tmpdir(), `leasehold-dashboard-${process.pid}.png`);
// docs/dashboard-quorum.png with LEASEHOLD_SCREENSHOT_QUORUM=docs/dashboard-quorum.png.
const QUORUM_SCREENSHOT =
  process.env['LEASEHOLD_SCREENSHOT_QUORUM'] ??
  join(tmpdir(), `leasehold-dashboard-quorum-${process.pid}.png`);
const driver = process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis';

/** Debian's chromium, or the one LEASEHOLD_CHROMIUM names. */
const chromium = [process.env['LEASEHOLD_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => path !== undefined && existsSync(path),
);
// The dashboard always tracks (BCAST): the polling run of the matrix would test nothing new.
const skip =
  chromium === undefined
    ? 'no chromium found (apt-get install chromium, or set LEASEHOLD_CHROMIUM to its path)'
    : process.env['LEASEHOLD_TEST_NOTIFICATIONS'] === 'polling'
      ? 'the dashboard does not depend on the notification mode of the run; the tracking runs cover it'
      : false;

let server: RedisServer;
const workers: Worker[] = [];
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await server.stop();
});

/** Starts `leasehold dashboard` and resolves with its URL once it listens. */
async function dashboard(
  prefix: string,
  args: string[],
  target: string[] = ['--redis', server.url],
): Promise<{ url: string; child: ChildProcess; err: () => string }> {
  const child = spawn(
    process.execPath,
    [...CLI, 'dashboard', ...target, '--prefix', prefix, '--driver', driver, '--port', '0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  reapOnExit(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const found = /leasehold dashboard: (http:\/\/\S+)/.exec(out)?.[1];
      if (found !== undefined) resolve(found);
    });
    child.once('close', () => reject(new Error(`dashboard exited: ${err}`)));
  });
  return { url, child, err: () => err };
}

async function worker(prefix: string, owner: string): Promise<Worker> {
  const w = await Worker.start(WORKER, { args: [server.url, prefix, owner] });
  workers.push(w);
  await w.next((m) => m['type'] === 'ready', 15_000);
  return w;
}

async function holding(w: Worker, type: string, message: Record<string, unknown>): Promise<void> {
  w.send({ type, ...message });
  await w.next((m) => m['type'] === 'holding' && m['name'] === message['name'], 10_000);
}

const processed = async () =>
  Number(/total_commands_processed:(\d+)/.exec(String(await command(server.port, ['INFO', 'stats'])))?.[1]);

describe('leasehold dashboard in a browser', { skip }, () => {
  test('a takeover appears within a second without a reload; nothing is read while nothing changes', async () => {
    const prefix = uniquePrefix('dash');
    const [api, billing, cron] = await Promise.all([
      worker(prefix, 'api-1@web-3'),
      worker(prefix, 'billing-worker-2'),
      worker(prefix, 'cron@ops-1'),
    ]);
    await holding(api, 'mutex', { name: 'orders:42' });
    await holding(cron, 'mutex', { name: 'cron:purge' });
    await holding(billing, 'semaphore', { name: 'uploads', limit: 5, permits: 2 });
    await holding(api, 'read', { name: 'config' });
    await holding(cron, 'campaign', { name: 'scheduler' });
    await holding(billing, 'fair', { name: 'payouts' });
    api.send({ type: 'fair', name: 'payouts' });
    cron.send({ type: 'fair', name: 'payouts' });

    const { url, child, err } = await dashboard(prefix, ['--allow-release']);
    const { chromium: browserType } = await import('playwright-core');
    const browser = await browserType.launch({
      executablePath: chromium as string,
      headless: true,
      // Root (CI, containers) cannot use Chromium's sandbox.
      args: ['--no-sandbox'],
    });
    try {
      // The page forbids eval (its CSP); the test's in-page checks are strings, which need it.
      const page = await browser.newPage({ viewport: { width: 1280, height: 640 }, bypassCSP: true });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(url);
      // In-page expressions are strings: this project compiles without the DOM's types.
      const holderIs = (name: string, owner: string) =>
        `document.querySelector('tr[data-name="${name}"] td.holder')?.firstChild?.textContent === ${JSON.stringify(owner)}`;
      await page.waitForFunction(holderIs('orders:42', 'api-1@web-3'), undefined, { timeout: 10_000 });
      await page.waitForFunction(
        `(document.querySelector('tr[data-name="payouts"] td.waiters')?.textContent ?? '').includes(',')`,
        undefined,
        { timeout: 10_000 },
      );
      assert.match((await page.textContent('#mode')) ?? '', /tracking/);
      // A marker a reload would wipe.
      await page.evaluate('window.marker = 42');

      // Quiet: workers hold with a 30 s TTL (extensions 10 s apart), so nobody writes and the
      // dashboard sends nothing.
      const quietFrom = await processed();
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal((await processed()) - quietFrom, 1, 'only the INFO of this check ran');

      const takenAt = Date.now();
      await holding(billing, 'force', { name: 'orders:42' });
      await page.waitForFunction(holderIs('orders:42', 'billing-worker-2'), undefined, { timeout: 1_000 });
      const shownAfter = Date.now() - takenAt;
      assert.ok(shownAfter < 1_000, `takeover shown after ${shownAfter} ms`);
      assert.equal(await page.evaluate('window.marker'), 42, 'no reload');
      const handoff = await page.textContent('ol.timeline li[data-type="handoff"]');
      assert.match(handoff ?? '', /orders:42: api-1@web-3 → billing-worker-2/);
      await new Promise((r) => setTimeout(r, 300));
      await page.screenshot({ path: SCREENSHOT });
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      child.kill('SIGINT');
      await new Promise((resolve) => child.once('close', resolve));
    }
    assert.equal(err(), '');
  });

  test('--host requires the printed token; force-release needs --allow-release, a confirmation, and is audited', async () => {
    const prefix = uniquePrefix('dash');
    const holder = await worker(prefix, 'stuck-job');
    await holding(holder, 'mutex', { name: 'stuck' });
    const exposed = await dashboard(prefix, ['--host', '127.0.0.1']);
    try {
      const token = new URL(exposed.url).searchParams.get('token');
      assert.ok(token !== null && token.length >= 16, exposed.url);
      assert.equal((await fetch(new URL('/', exposed.url))).status, 401);
      assert.equal((await fetch(new URL(`/?token=${token}`, exposed.url))).status, 200);
      const refused = await fetch(new URL(`/release?token=${token}`, exposed.url), {
        method: 'POST',
        body: JSON.stringify({ name: 'stuck', token: 'x', confirm: 'stuck' }),
      });
      assert.equal(refused.status, 403, 'read-only by default');
    } finally {
      exposed.child.kill('SIGINT');
      await new Promise((resolve) => exposed.child.once('close', resolve));
    }

    const admin = await dashboard(prefix, ['--allow-release']);
    try {
      const events = await fetch(new URL('/events', admin.url));
      const reader = events.body!.getReader();
      let stream = '';
      while (!stream.includes('"owner":"stuck-job"'))
        stream += new TextDecoder().decode((await reader.read()).value);
      const token = /"token":"([^"]+)"/.exec(stream)?.[1];
      const post = (body: object) =>
        fetch(new URL('/release', admin.url), { method: 'POST', body: JSON.stringify(body) });
      assert.equal(
        (await post({ name: 'stuck', token, confirm: 'nope' })).status,
        400,
        'confirmation needed',
      );
      assert.equal((await post({ name: 'stuck', token: 'someone-else', confirm: 'stuck' })).status, 409);
      assert.equal((await post({ name: 'stuck', primitive: 'nope', token, confirm: 'stuck' })).status, 400);
      assert.equal(
        (await post({ name: 'stuck', primitive: 'semaphore', token, confirm: 'stuck' })).status,
        409,
        'only the primitive the page showed',
      );
      const ok = await post({ name: 'stuck', token, confirm: 'stuck' });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { released: true });
      while (!stream.includes('"type":"forced"'))
        stream += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      assert.match(
        admin.err(),
        /AUDIT .* force-release name="stuck" primitive=mutex owner="stuck-job" token=\S+ released=true from=/,
      );
    } finally {
      admin.child.kill('SIGINT');
      await new Promise((resolve) => admin.child.once('close', resolve));
    }
  });

  test('on a quorum of masters: each name on how many nodes, an under-replicated one marked', async () => {
    const prefix = uniquePrefix('dashq');
    await using masters = await startMasters(3);
    // Polling with a 30 s TTL: the holder puts a lost copy back only at its next extension.
    const lh = await Leasehold.connect({
      nodes: [...masters.urls],
      prefix,
      driver: driver as 'node-redis',
      notifications: 'polling',
      ttl: 30_000,
    });
    let other: Leasehold | undefined;
    try {
      await lh.acquire('payouts:eu', { owner: 'billing-worker-1' });
      await lh.acquire('cron:purge', { owner: 'cron@ops-1' });
      await lh.multiLock(['account:1', 'account:2']).acquire({ owner: 'transfer-7' });
      // A second process waits for cron:purge: a quorum's waiters are recorded on its nodes.
      other = await Leasehold.connect({
        nodes: [...masters.urls],
        prefix,
        driver: driver as 'node-redis',
        notifications: 'polling',
        ttl: 30_000,
      });
      const ac = new AbortController();
      const waiting = other
        .acquire('cron:purge', { owner: 'cron@ops-2', signal: ac.signal })
        .catch(() => undefined);
      // One node lost payouts:eu (restarted empty, say): a majority still holds it.
      await masters.everyNodeHas(`${prefix}:{payouts:eu}`);
      await command(masters.servers[0]!.port, ['DEL', `${prefix}:{payouts:eu}`]);
      const { url, child, err } = await dashboard(prefix, [], ['--nodes', masters.urls.join(',')]);
      const { chromium: browserType } = await import('playwright-core');
      const browser = await browserType.launch({
        executablePath: chromium as string,
        headless: true,
        args: ['--no-sandbox'],
      });
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 420 }, bypassCSP: true });
        await page.goto(url);
        const cell = (name: string) =>
          `document.querySelector('tr[data-name="${name}"] td.holder')?.textContent ?? ''`;
        await page.waitForFunction(
          `(${cell('payouts:eu')}).includes('on 2 of 3 nodes · under-replicated')`,
          undefined,
          {
            timeout: 10_000,
          },
        );
        await page.waitForFunction(`(${cell('cron:purge')}).includes('on 3 of 3 nodes')`, undefined, {
          timeout: 10_000,
        });
        assert.doesNotMatch((await page.evaluate(cell('cron:purge'))) as string, /under-replicated/);
        await page.waitForFunction(
          `(document.querySelector('tr[data-name="cron:purge"] td.waiters')?.textContent ?? '') === 'cron@ops-2'`,
          undefined,
          { timeout: 10_000 },
        );
        await page.screenshot({ path: QUORUM_SCREENSHOT });
      } finally {
        await browser.close();
        child.kill('SIGINT');
        await new Promise((resolve) => child.once('close', resolve));
      }
      assert.equal(err(), '');
      ac.abort();
      await waiting;
    } finally {
      await Promise.all([lh.close(), other?.close()]);
    }
  });
});
