// A counting semaphore: six jobs, at most two at a time, across every process that runs this.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/semaphore.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold } from 'leasehold';

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL;
const uploads = lh.semaphore('example:uploads', { limit: 2 });

await Promise.all(
  Array.from({ length: 6 }, async (_, job) => {
    await using permit = await uploads.acquire({ timeout: 30_000 });
    console.log(`job ${job} started (fencing token ${permit.fencingToken}, ${await uploads.count()} in use)`);
    await sleep(200, undefined, { signal: permit.signal });
  }),
);
// Two permits at once, all or nothing:
const pair = await uploads.acquire({ permits: 2 });
console.log(`took both permits: ${await uploads.count()} in use`);
await pair.release();
await lh.close();
