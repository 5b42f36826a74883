// A fair lock: waiters are served in the order they arrived, whichever process they are in.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/fair-lock.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold } from 'leasehold';

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL;
const payouts = lh.fairLock('example:payouts');

const first = await payouts.acquire();
const served: Promise<void>[] = [];
for (const who of ['alice', 'bob', 'carol']) {
  served.push(
    payouts.acquire({ timeout: 10_000 }).then(async (turn) => {
      console.log(`${who}'s turn (fencing token ${turn.fencingToken})`);
      await turn.release();
    }),
  );
  await sleep(20); // arrive in a known order
}
await first.release(); // wakes alice only; alice's release wakes bob; and so on
await Promise.all(served);
await lh.close();
