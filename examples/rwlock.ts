// A read-write lock: readers share, a writer is alone, and a waiting writer keeps new readers out.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/rwlock.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold } from 'leasehold';

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL;
const config = lh.readWriteLock('example:config');

const reader = async (id: number) => {
  await using r = await config.read({ timeout: 10_000 });
  console.log(`reader ${id} in (token ${r.fencingToken})`);
  await sleep(100);
};
const writer = async () => {
  await using w = await config.write({ timeout: 10_000 });
  console.log(`writer in (token ${w.fencingToken}), alone`);
  await sleep(100);
};

await Promise.all([reader(1), reader(2), sleep(20).then(writer), sleep(40).then(() => reader(3))]);
// Reader 3 arrived after the writer started waiting, so it goes after the writer.
await lh.close();
