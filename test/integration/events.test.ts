// Events on the Leasehold instance and the node:diagnostics_channel channels fire, in order, for a
// full acquire / extend / lose / release cycle; optional OpenTelemetry metrics record the same.
import assert from 'node:assert/strict';
import diagnosticsChannel from 'node:diagnostics_channel';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { CHANNELS, resetTelemetry } from '../../src/diagnostics.ts';
import { type Leasehold, type LeaseholdEvents, LockLostError } from '../../src/index.ts';
import { aborted, connect, lockKey, mode, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

type EventName = keyof LeaseholdEvents;
const EVENTS = Object.keys(CHANNELS) as EventName[];

const redis = useRedis();

/** Records every event of `lh` and every channel message about it, in arrival order. */
function record(lh: Leasehold): { log: string[]; messages: Record<string, unknown>[]; stop(): void } {
  const log: string[] = [];
  const messages: Record<string, unknown>[] = [];
  const undo: (() => void)[] = [];
  for (const event of EVENTS) {
    const onEvent = () => log.push(`event:${event}`);
    lh.on(event, onEvent);
    const onMessage = (message: unknown) => {
      const m = message as Record<string, unknown>;
      if (m['instance'] !== lh) return;
      log.push(`channel:${event}`);
      messages.push({ event, ...m });
    };
    diagnosticsChannel.subscribe(CHANNELS[event], onMessage);
    undo.push(() => {
      lh.off(event, onEvent);
      diagnosticsChannel.unsubscribe(CHANNELS[event], onMessage);
    });
  }
  return {
    log,
    messages,
    stop: () => {
      for (const f of undo) f();
    },
  };
}

/** Collapses repeats (automatic extension may run more than once while the test waits). */
const collapse = (log: string[]): string[] => log.filter((entry, i) => entry !== log[i - 2]);

describe(`events and diagnostics channels (${mode})`, () => {
  test('acquired, extended, lost, acquired, released: each channel message right before its event', async () => {
    const prefix = uniquePrefix('ev');
    const lh = await connect(redis.server, { prefix, ttl: 300 });
    const rec = record(lh);
    try {
      const first = await lh.acquire('job');
      const [extended] = (await within(once(lh, 'extended'), 2_000, 'automatic extension')) as [
        LeaseholdEvents['extended'],
      ];
      assert.equal(extended.name, 'job');
      assert.equal(extended.fencingToken, first.fencingToken);
      assert.equal(extended.ttl, 300);
      assert.ok(extended.expiresAt > Date.now());

      // Listening before the DEL: the holder can hear its push and re-verify before this process
      // handles the DEL's own reply (a new connection; seen for a flush in live-view.test.ts).
      const losing = once(lh, 'lost');
      await command(redis.server.port, ['DEL', lockKey(prefix, 'job')]);
      const [lost] = (await within(losing, 2_000, 'loss after an external DEL')) as [LeaseholdEvents['lost']];
      assert.ok(lost.error instanceof LockLostError);
      assert.equal(lost.fencingToken, first.fencingToken);
      assert.ok(first.lost);

      const second = await lh.acquire('job');
      assert.equal(await second.release(), true);

      assert.deepEqual(collapse(rec.log), [
        'channel:acquired',
        'event:acquired',
        'channel:extended',
        'event:extended',
        'channel:lost',
        'event:lost',
        'channel:acquired',
        'event:acquired',
        'channel:released',
        'event:released',
      ]);
      const released = rec.messages.at(-1)!;
      assert.equal(released['name'], 'job');
      assert.equal(released['fencingToken'], second.fencingToken);
      assert.equal(released['instance'], lh);
      assert.equal(typeof rec.messages[0]!['waited'], 'number');
    } finally {
      rec.stop();
      await lh.close();
    }
  });

  test('extension-failed while Redis is down, then lost when validity runs out', async () => {
    const own = await RedisServer.start();
    // 'reverify': the lease outlives the dropped connection until its validity runs out.
    const lh = await connect(own, { ttl: 400, onDisconnect: 'reverify' });
    const rec = record(lh);
    try {
      const lease = await lh.acquire('job');
      // Listening before the stop: the dropped connection can fail an extension before stop()
      // has seen the process exit.
      const failing = once(lh, 'extension-failed');
      await own.stop();
      const [failed] = (await within(failing, 2_000, 'a failed extension')) as [
        LeaseholdEvents['extension-failed'],
      ];
      assert.equal(failed.name, 'job');
      assert.ok(failed.error instanceof Error);
      const reason = await within(aborted(lease.signal), 2_000, 'loss at the end of validity');
      assert.ok(reason instanceof LockLostError);
      assert.equal(reason.reason, 'validity');
      const order = rec.log
        .filter((e) => e.startsWith('event:') && e !== 'event:disconnected')
        .filter((e, i, all) => e !== all[i - 1]);
      assert.deepEqual(order.slice(0, 3), ['event:acquired', 'event:extension-failed', 'event:lost']);
    } finally {
      rec.stop();
      await lh.close();
      await own.stop();
    }
  });

  test('OpenTelemetry metrics through @opentelemetry/api, when installed', async (t) => {
    let api: { metrics: { setGlobalMeterProvider(p: unknown): boolean; disable(): void } };
    try {
      const specifier = '@opentelemetry/api';
      api = (await import(specifier)) as typeof api;
    } catch {
      // @opentelemetry/api is an optional peer that leasehold never depends on; the repository's
      // devDependencies install it, a trimmed install (`npm ci --omit=dev`) does not.
      t.skip('@opentelemetry/api is not installed (an optional peer; npm ci installs it)');
      return;
    }
    const recorded: { name: string; value: number; attributes?: Record<string, string> }[] = [];
    const instrument = (name: string) => ({
      record: (value: number, attributes?: Record<string, string>) =>
        recorded.push({ name, value, ...(attributes === undefined ? {} : { attributes }) }),
      add: (value: number, attributes?: Record<string, string>) =>
        recorded.push({ name, value, ...(attributes === undefined ? {} : { attributes }) }),
    });
    const meter = { createHistogram: instrument, createCounter: instrument, createUpDownCounter: instrument };
    api.metrics.disable();
    resetTelemetry();
    const lh = await connect(redis.server, { prefix: uniquePrefix('otel'), ttl: 300 });
    try {
      // Locks used before the application registers its MeterProvider (the api's no-op meter
      // meanwhile): the provider registered later still gets what follows.
      await (await lh.acquire('before-provider')).release();
      api.metrics.setGlobalMeterProvider({ getMeter: () => meter });
      const lease = await lh.acquire('job');
      await within(once(lh, 'extended'), 2_000, 'automatic extension');
      await lease.release();
      const names = recorded.map((r) => r.name);
      for (const name of [
        'leasehold.lock.acquire.duration',
        'leasehold.lock.held',
        'leasehold.lock.extensions',
        'leasehold.lock.hold.duration',
      ]) {
        assert.ok(names.includes(name), `${name} recorded: ${names.join(', ')}`);
      }
      const held = recorded.filter((r) => r.name === 'leasehold.lock.held').map((r) => r.value);
      assert.deepEqual(held, [1, -1]);
    } finally {
      await lh.close();
      api.metrics.disable();
      resetTelemetry();
    }
  });
});
