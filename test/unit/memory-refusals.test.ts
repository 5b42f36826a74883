import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Leasehold, MemoryBackend } from '../../src/index.ts';

test('the in-memory backend refuses the primitives it does not run yet, with a TypeError that says so', async () => {
  const lh = await Leasehold.connect({ backend: new MemoryBackend() });
  try {
    for (const [what, make] of [
      ['semaphore', () => lh.semaphore('s', { limit: 2 })],
      ['readWriteLock', () => lh.readWriteLock('r')],
      ['fairLock', () => lh.fairLock('f')],
      ['election', () => lh.election('e')],
    ] as const) {
      assert.throws(make, (error: unknown) => {
        assert.ok(error instanceof TypeError, what);
        assert.match(error.message, new RegExp(`${what}\\(\\) is not available with the in-memory backend`));
        return true;
      });
    }
    const lease = await lh.acquire('mutex works');
    assert.equal(await lease.release(), true);
  } finally {
    await lh.close();
  }
});
