import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as leasehold from '../../src/index.ts';

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
