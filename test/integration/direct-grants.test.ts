// Direct grants (docs/direct-grants.md): a release hands a mutex to the first registered waiter
// and publishes it. Each test's waiter is deaf (harness/grants.ts: it attempts only every 10 s),
// so a waiter that gets the lock within a second got it by the grant; the wake-all path would
// have taken 10 s.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { grantProbes, HOLDER_TTL } from '../harness/grants.ts';
import {
  aborted,
  lockKey,
  mode,
  testDriver,
  tracking,
  uniquePrefix,
  useRedis,
  within,
} from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { command } from '../harness/resp.ts';

const redis = useRedis();
const probes = grantProbes(redis);
const { channels, deaf, subscribed } = probes;

/** Waits until `n` waiters of `name` are registered in Redis. */
const registered = (prefix: string, name: string, n: number) =>
  probes.registered(`${lockKey(prefix, name)}:waiters`, n);

/** Every command Redis runs from now on, as MONITOR prints them, until `stop()`. */
async function monitor(port: number): Promise<{ lines: () => string[]; stop: () => void }> {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk) => {
    text += chunk.toString();
  });
  socket.write('MONITOR\r\n');
  await until('MONITOR on', async () => text.startsWith('+OK'), { timeout: 2_000, interval: 5 });
  return { lines: () => text.split('\r\n').slice(1), stop: () => socket.destroy() };
}

/**
 * A lock `job` held by one instance and waited for by another whose grant subscription is up,
 * with MONITOR started before the wait: what the waiter sends is all in `watch`.
 */
async function monitoredWait() {
  const prefix = uniquePrefix('grant');
  const a = await redis.instance(prefix, HOLDER_TTL);
  const b = await redis.instance(prefix, HOLDER_TTL);
  await subscribed(a, b, prefix);
  const held = await a.acquire('job');
  const watch = await monitor(redis.server.port);
  const waiting = b.acquire('job', { timeout: 30_000 });
  await registered(prefix, 'job', 1);
  return { held, waiting, watch };
}

describe(`direct grants (${mode})`, () => {
  test('a release hands the lock to the registered waiter at once, with a higher fencing token', async () => {
    const prefix = uniquePrefix('grant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.acquire('job');
    const waiting = b.acquire('job', { timeout: 30_000 });
    await registered(prefix, 'job', 1);
    await held.release();
    const lease = await within(waiting, 1_000, 'the granted lease');
    assert.ok(lease.fencingToken > held.fencingToken, 'fencing token increased');
    assert.ok(!lease.signal.aborted);
    assert.equal(await command(redis.server.port, ['ZCARD', `${lockKey(prefix, 'job')}:waiters`]), 0);
    await lease.release();
    assert.equal(await command(redis.server.port, ['EXISTS', lockKey(prefix, 'job')]), 0, 'released');
  });

  test('a contended acquire sends two acquire calls (the first registers nothing), and none while it waits', async (t) => {
    if (!tracking) return t.skip('a polling waiter attempts on its timer: nothing to count');
    const { held, waiting, watch } = await monitoredWait();
    try {
      await sleep(300); // long enough for anything it would send while the holder keeps the lock
      const calls = watch.lines().filter((l) => l.includes('"EVALSHA"') && l.includes('{job}'));
      // The fast path's attempt, found busy, hands its verdict to the wait (Engine.acquire), whose
      // next attempt registers: a wait costs no attempt beyond those two.
      assert.equal(calls.length, 2, `acquire calls while the lock was held:\n${calls.join('\n')}`);
      await held.release();
      await (await within(waiting, 1_000, 'the granted lease')).release();
    } finally {
      watch.stop();
    }
  });

  test('a waiter that must claim its grant sends one acquire for it, not one per wake-up', async (t) => {
    if (!tracking) return t.skip('the wake-up that raced the claim is a push: polling mode has none');
    const { held, waiting, watch } = await monitoredWait();
    try {
      // Past half the claim window (500 ms) since it registered: the grant is claimed by an attempt.
      await sleep(400);
      const acquire = /"EVALSHA" "([0-9a-f]{40})"/.exec(
        watch.lines().find((l) => l.includes('EVALSHA')) ?? '',
      )?.[1];
      assert.ok(acquire !== undefined, "the waiter's first attempt was seen");
      const before = watch.lines().length;
      await held.release();
      const lease = await within(waiting, 1_000, 'the granted lease');
      await sleep(100); // what else the waiter sent for it, had it sent more
      const after = watch.lines().slice(before);
      const attempts = after.filter((l) => l.includes(`"EVALSHA" "${acquire}"`));
      // The grant's message and the release's push of the key arrive together: the one attempt
      // out (whichever woke it) finds the grant and claims it; the other waits for it.
      assert.equal(attempts.length, 1, `acquire calls after the release:\n${attempts.join('\n')}`);
      assert.ok(lease.fencingToken > held.fencingToken);
      await lease.release();
    } finally {
      watch.stop();
    }
  });

  test('a granted holder hears of a DEL at once (tracking re-armed after the grant)', async (t) => {
    if (mode.endsWith('polling')) return t.skip('polling mode has no pushes to re-arm');
    const prefix = uniquePrefix('grant');
    const a = await redis.instance(prefix);
    const b = await redis.instance(prefix);
    await subscribed(a, b, prefix);
    const held = await a.acquire('job');
    const waiting = b.acquire('job', { timeout: 10_000 });
    await registered(prefix, 'job', 1);
    await held.release();
    const lease = await waiting;
    // Let the grant's own push and what it sets off (the re-arming read) settle first.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await command(redis.server.port, ['DEL', lockKey(prefix, 'job')]);
    await within(aborted(lease.signal), 1_000, 'the granted lease aborted after a DEL');
  });

  test('a waiter that gave up leaves no lock behind: the name is free after the release', async () => {
    const prefix = uniquePrefix('grant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const b = await deaf(prefix);
    await subscribed(a, b, prefix);
    const held = await a.acquire('job');
    const controller = new AbortController();
    const waiting = b.acquire('job', { timeout: 30_000, signal: controller.signal });
    await registered(prefix, 'job', 1);
    controller.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    await registered(prefix, 'job', 0);
    await held.release();
    const again = await a.tryAcquire('job');
    assert.ok(again !== undefined, 'the name is free');
    await again.release();
  });

  test('a waiter whose process died is skipped: the next one gets the lock', async () => {
    const prefix = uniquePrefix('grant');
    const a = await redis.instance(prefix, HOLDER_TTL);
    const held = await a.acquire('job');
    // A waiter in a process of its own, registered first, then SIGKILLed.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { Leasehold } from ${JSON.stringify(new URL('../../src/index.ts', import.meta.url).pathname)};
         const lh = await Leasehold.connect({ url: ${JSON.stringify(redis.server.url)}, driver: ${JSON.stringify(testDriver)},
           prefix: ${JSON.stringify(prefix)}, notifications: 'polling', retryDelay: 100 });
         await lh.acquire('job', { timeout: 60_000 });`,
      ],
      { stdio: 'ignore' },
    );
    const b = await deaf(prefix);
    try {
      await registered(prefix, 'job', 1);
      await subscribed(a, b, prefix);
      const waiting = b.acquire('job', { timeout: 30_000 });
      await registered(prefix, 'job', 2);
      const live = await channels(prefix);
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      // Redis drops the dead process's subscriber once it has seen the socket close.
      await until('the dead subscriber gone', async () => (await channels(prefix)) === live - 1, {
        timeout: 5_000,
        interval: 10,
      });
      await held.release();
      const lease = await within(waiting, 1_000, 'the live waiter granted');
      assert.ok(lease.fencingToken > held.fencingToken);
      await lease.release();
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
