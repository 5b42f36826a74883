// PostgreSQL: a call that names a key it did not declare (a fair lock's release writes the next
// waiter's turn key) takes the key's advisory lock in the one global order, or starts over with it
// declared (src/postgres/transaction.ts). Before, it locked the key after its declared ones: a
// waiter's attempt, which declares its turn key, could hold that key and wait for the lock key the
// release held, and PostgreSQL broke the deadlock only after deadlock_timeout (a second), so a
// handoff took a second, the grant's claim window passed, and the next in line was served first.
// Rounds of nine waiters across three instances, each round in arrival order (about two of five
// rounds broke it before).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Leasehold } from '../../src/index.ts';
import { uniquePrefix, within } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { PgDatabase } from '../harness/postgres.ts';

const ROUNDS = 8;

describe('postgres: keys a script did not declare are locked in order', () => {
  let db: PgDatabase;
  before(async () => {
    db = await PgDatabase.create();
  });
  after(async () => {
    await db?.drop();
  });

  test(`a fair lock serves waiters of three instances in arrival order, ${ROUNDS} rounds`, async () => {
    const prefix = uniquePrefix('order');
    const lhs = await Promise.all(
      [0, 1, 2].map(() => Leasehold.connect({ postgres: db.url, prefix, ttl: 2_000 })),
    );
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const name = `fifo-${round}`;
        const holder = await lhs[0]!.fairLock(name).acquire();
        const order: number[] = [];
        const done: Promise<void>[] = [];
        for (let i = 0; i < 9; i++) {
          const pending = lhs[i % 3]!.fairLock(name).acquire({ timeout: 10_000 });
          done.push(
            pending.then(async (lease) => {
              order.push(i);
              await lease.release();
            }),
          );
          await until(
            `${i + 1} in line`,
            async () => ((await lhs[0]!.inspect(name, { primitive: 'fair' }))?.queued ?? 0) > i || undefined,
            { timeout: 2_000, interval: 2 },
          );
        }
        await holder.release();
        await within(Promise.all(done), 8_000, 'every waiter served');
        assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7, 8], `round ${round}`);
      }
    } finally {
      await Promise.all(lhs.map((lh) => lh.close()));
    }
  });
});
