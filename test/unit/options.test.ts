import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkAcquireOptions, checkConnectOptions, checkName } from '../../src/options/index.ts';

/** Asserts a TypeError whose message names the option and shows the value received. */
function rejects(fn: () => unknown, option: string, shown: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof TypeError, `TypeError expected, got ${String(error)}`);
    assert.ok(error.message.includes(`"${option}"`), `names ${option}: ${error.message}`);
    assert.ok(error.message.includes(shown), `shows ${shown}: ${error.message}`);
    return true;
  });
}

describe('acquire options', () => {
  const defaults = { ttl: 1_000 };
  test('durations must be finite and positive', () => {
    for (const ttl of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '100', 2 ** 40]) {
      rejects(() => checkAcquireOptions({ ttl }, defaults), 'ttl', String(ttl === '100' ? '"100"' : ttl));
    }
    for (const timeout of [-1, Number.NaN, '5', null]) {
      rejects(
        () => checkAcquireOptions({ timeout }, defaults),
        'timeout',
        timeout === '5' ? '"5"' : String(timeout),
      );
    }
  });
  test('timeout 0 and Infinity are allowed; defaults apply', () => {
    assert.equal(checkAcquireOptions({ timeout: 0 }, defaults).timeout, 0);
    assert.equal(checkAcquireOptions(undefined, defaults).timeout, Number.POSITIVE_INFINITY);
    assert.equal(checkAcquireOptions({}, defaults).ttl, 1_000);
  });
  test('signal must be an AbortSignal; unknown keys are refused', () => {
    rejects(() => checkAcquireOptions({ signal: {} }, defaults), 'signal', 'an object');
    assert.throws(() => checkAcquireOptions({ tll: 5 }, defaults), /unknown option "tll"/);
    rejects(() => checkAcquireOptions('fast', defaults), 'options', '"fast"');
  });
});

describe('names', () => {
  test('empty, over-long and non-string names are refused', () => {
    rejects(() => checkName(''), 'name', '""');
    rejects(() => checkName('x'.repeat(1025)), 'name', 'xxxx');
    rejects(() => checkName(42), 'name', '42');
    rejects(() => checkName(undefined), 'name', 'undefined');
    assert.equal(checkName('cron:purge'), 'cron:purge');
  });
});

describe('connect options', () => {
  test('bad values name the option', () => {
    rejects(() => checkConnectOptions({ url: 'http://x' }), 'url', '"http://x"');
    // Regression: a port that is not a number used to pass and fail later as "no answer".
    rejects(() => checkConnectOptions({ url: 'redis://:notaport' }), 'url', '"redis://:notaport"');
    rejects(() => checkConnectOptions({ url: 'redis://h:x1' }), 'url', '"redis://h:x1"');
    rejects(
      () => checkConnectOptions({ nodes: ['redis://a:1', 'redis://b:x', 'redis://c:3'] }),
      'nodes',
      '"redis://b:x"',
    );
    rejects(() => checkConnectOptions({ ttl: -1 }), 'ttl', '-1');
    rejects(() => checkConnectOptions({ notifications: 'push' }), 'notifications', '"push"');
    rejects(() => checkConnectOptions({ driver: 'redis' }), 'driver', '"redis"');
    rejects(() => checkConnectOptions({ prefix: '' }), 'prefix', '""');
    rejects(() => checkConnectOptions({ prefix: 'a{b}' }), 'prefix', '"a{b}"');
    rejects(() => checkConnectOptions({ retryDelay: 0 }), 'retryDelay', '0');
    rejects(() => checkConnectOptions({ client: {} }), 'client', 'an object');
    assert.throws(() => checkConnectOptions({ ttl: 5, urll: 'x' }), /unknown option "urll"/);
  });
  test('defaults', () => {
    const o = checkConnectOptions({ url: 'redis://h:1' });
    assert.equal(o.ttl, 10_000);
    assert.equal(o.prefix, 'leasehold');
    assert.equal(o.notifications, 'auto');
    assert.equal(o.driver, 'node-redis');
    assert.equal(o.lowLatency, undefined);
  });
  test('lowLatency: off, true (defaults) or { interval, window } in range', () => {
    assert.equal(checkConnectOptions({ lowLatency: false }).lowLatency, undefined);
    assert.deepEqual(checkConnectOptions({ lowLatency: true }).lowLatency, { interval: 2, window: 1_000 });
    assert.deepEqual(checkConnectOptions({ lowLatency: { interval: 5 } }).lowLatency, {
      interval: 5,
      window: 1_000,
    });
    rejects(() => checkConnectOptions({ lowLatency: 'yes' }), 'lowLatency', '"yes"');
    rejects(() => checkConnectOptions({ lowLatency: { interval: 0 } }), 'lowLatency.interval', '0');
    rejects(() => checkConnectOptions({ lowLatency: { window: 120_000 } }), 'lowLatency.window', '120000');
    assert.throws(() => checkConnectOptions({ lowLatency: { every: 1 } }), /unknown option "every"/);
  });
});
