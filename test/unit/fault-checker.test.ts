// The safety checker (test/fault/checker.ts) on hand-made histories: it must see what it claims to.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { check, type WorkerEvent } from '../fault/checker.ts';
import type { ResourceEntry } from '../fault/resource.ts';
import { parseEntry } from '../fault/resource.ts';
import { skewFromEnv } from '../harness/skew-clock.ts';

const ev = (worker: string, type: string, token: number, at: number, extra: object = {}): WorkerEvent => ({
  worker,
  type,
  token: String(token),
  at,
  ...extra,
});

const write = (token: number, accepted: boolean, at: number, writer = 'w0'): ResourceEntry => ({
  accepted,
  token: BigInt(token),
  highest: undefined,
  writer,
  seq: 0,
  at,
});

describe('safety checker', () => {
  test('a clean hand-over has no overlap, no lapse, no stale write', () => {
    const events = [
      ev('w0', 'enter', 1, 0, { validityEnd: 1_000 }),
      ev('w0', 'exit', 1, 100, { released: 'true' }),
      ev('w0', 'abort', 1, 101, { reason: 'released' }),
      ev('w1', 'enter', 2, 102, { validityEnd: 1_100 }),
      ev('w1', 'exit', 2, 200, { released: 'true' }),
    ];
    const result = check(events, [write(1, true, 50), write(2, true, 150, 'w1')]);
    assert.equal(result.criticalSections, 2);
    assert.deepEqual(result.overlaps, []);
    assert.equal(result.lapses, 0);
    assert.equal(result.staleAccepted, 0);
    assert.deepEqual(result.errors, []);
  });

  test('a holder trusted past the next enter is an overlap; validity end caps trust', () => {
    const events = [
      ev('w0', 'enter', 1, 0, { validityEnd: 500 }),
      ev('w1', 'enter', 2, 400, { validityEnd: 1_400 }),
      ev('w0', 'abort', 1, 900, { reason: 'validity' }),
      ev('w0', 'exit', 1, 901),
      ev('w1', 'exit', 2, 1_000),
    ];
    const result = check(events, []);
    assert.equal(result.overlaps.length, 1);
    assert.equal(result.overlaps[0]!.ms, 100, 'w0 is trusted until its validity end (500), not its abort');
    assert.equal(result.overlaps[0]!.firstEnd, 'validity');
    assert.equal(result.overlaps[0]!.secondIn, 'expiry', 'w0 never released: w1 got in when the key expired');
    assert.equal(result.worstLag, 400);
  });

  test('an overlap says what ended the first trust and what let the second in', () => {
    const events = [
      ev('w0', 'enter', 1, 0, { validityEnd: 1_000 }),
      ev('w1', 'enter', 2, 99, { validityEnd: 1_099 }),
      ev('w0', 'exit', 1, 100, { released: 'true', releasedAt: 98 }),
      ev('w0', 'enter', 3, 2_000, { validityEnd: 3_000 }),
      ev('w0', 'abort', 3, 2_100, { reason: 'expired' }),
      ev('w1', 'enter', 4, 2_050, { validityEnd: 3_050 }),
    ];
    const [first, second] = check(events, []).overlaps;
    assert.equal(first?.firstEnd, 'exit');
    assert.equal(first?.secondIn, 'release');
    assert.match(first?.cause ?? '', /w0 #1 trusted until exit; w1 #2 got in by release .*exit 1\.0 ms/);
    assert.equal(second?.firstEnd, 'abort: expired');
    assert.equal(second?.secondIn, 'expiry');
  });

  test('time the holder spent SIGSTOPped is not signal lag', () => {
    const events = [
      ev('w0', 'enter', 1, 0, { validityEnd: 500 }),
      ev('w0', 'abort', 1, 2_010, { reason: 'validity' }),
      ev('w0', 'exit', 1, 2_011),
    ];
    const result = check(events, [], [{ worker: 'w0', from: 300, to: 2_000 }]);
    assert.equal(result.lapses, 1);
    assert.equal(Math.round(result.worstLag), 10);
  });

  test('a lease dead on arrival is counted, and lag counts from its enter', () => {
    const events = [
      ev('w0', 'enter', 1, 1_000, { validityEnd: 600 }),
      ev('w0', 'abort', 1, 1_001, { reason: 'validity' }),
      ev('w0', 'exit', 1, 1_002),
    ];
    const result = check(events, []);
    assert.equal(result.deadOnArrival, 1);
    assert.equal(result.worstLag, 1);
  });

  test('an accepted write below the highest accepted token is a stale write accepted', () => {
    const result = check([], [write(5, true, 1), write(4, true, 2), write(3, false, 3)]);
    assert.equal(result.staleAccepted, 1);
    assert.equal(result.staleRejected, 1);
  });

  test('worker errors and bad exits are reported; expected acquire errors are not', () => {
    const events: WorkerEvent[] = [
      { worker: 'w0', type: 'error', where: 'unhandledRejection', message: 'boom' },
      { worker: 'w1', type: 'acquire-error', code: 'LEASEHOLD_ERR_REDIS_UNAVAILABLE', message: 'x' },
      { worker: 'w1', type: 'acquire-error', code: 'none', message: 'TypeError: y' },
    ];
    const result = check(events, [], [], [{ worker: 'w2', code: 1, signal: null }]);
    assert.equal(result.errors.length, 3);
  });

  test('resource log lines parse, with microsecond server time', () => {
    const entry = parseEntry('1 12 7 w1 3 1700000000123456');
    assert.deepEqual(entry, {
      accepted: true,
      token: 12n,
      highest: 7n,
      writer: 'w1',
      seq: 3,
      at: 1_700_000_000_123.456,
    });
  });

  test('skew settings are validated', () => {
    assert.deepEqual(skewFromEnv({ LEASEHOLD_SKEW_RATE: '0.5', LEASEHOLD_SKEW_OFFSET: '-10' }), {
      rate: 0.5,
      offset: -10,
    });
    assert.throws(() => skewFromEnv({ LEASEHOLD_SKEW_RATE: '0' }), TypeError);
  });
});
