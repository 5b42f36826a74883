import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as leasehold from '../../src/index.ts';
import { toLeaseholdError } from '../../src/runners/failures.ts';

test('every error code is documented in docs/errors.md', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  for (const code of leasehold.ERROR_CODES)
    assert.ok(doc.includes(`\`${code}\``), `${code} missing from docs`);
});

test('every exported error class has a listed, unique code and extends LeaseholdError', () => {
  const samples = [
    new leasehold.LockTimeoutError('n', 1),
    new leasehold.LockLostError('n', 'taken', 'x'),
    new leasehold.LockReleasedError('n'),
    new leasehold.QuorumError('x'),
    new leasehold.ConnectionClosedError(),
    new leasehold.RedisCommandError('x'),
    new leasehold.RedisUnavailableError('x'),
    new leasehold.ConnectError('x'),
    new leasehold.DurabilityError('n', 0, 1, 100),
    new leasehold.NotificationsError('x'),
    new leasehold.IdempotencyConflictError('k'),
    new leasehold.OutcomeUnknownError('k', 0, 'o', 1n),
    new leasehold.ScriptingUnavailableError('x'),
  ];
  const codes = samples.map((e) => e.code);
  assert.equal(new Set(codes).size, codes.length);
  for (const error of samples) {
    assert.ok(error instanceof leasehold.LeaseholdError);
    assert.ok((leasehold.ERROR_CODES as readonly string[]).includes(error.code), error.code);
    assert.match(error.code, /^LEASEHOLD_ERR_[A-Z_]+$/);
    assert.equal(error.name, error.constructor.name);
  }
  assert.equal(samples.length, leasehold.ERROR_CODES.length, 'a class for every code');
});

// A refusal Redis will repeat (a script error, a wrong type, keys in different Cluster slots) is a
// RedisCommandError: a waiting acquire() must not retry it as "Redis unreachable" until its timeout.
test('server refusals are RedisCommandError, a missing answer RedisUnavailableError', () => {
  for (const message of [
    'ERR Error running script',
    'WRONGTYPE Operation against a key holding the wrong kind of value',
    "CROSSSLOT Keys in request don't hash to the same slot",
    'NOPERM this user has no permissions to run the evalsha command',
  ]) {
    assert.ok(toLeaseholdError(new Error(message), 'x') instanceof leasehold.RedisCommandError, message);
  }
  const gone = toLeaseholdError(new Error('connect ECONNREFUSED 127.0.0.1:1'), 'acquire');
  assert.ok(gone instanceof leasehold.RedisUnavailableError);
});
