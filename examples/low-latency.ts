// The opt-in low-latency mode (docs/low-latency.md): a process that waits for a lock keeps itself
// warm with a PING every 2 ms during the first second of its wait, so that the lock handed to it
// by a release arrives sooner. Waiting without it costs Redis nothing; with it, 500 PINGs a second.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/low-latency.ts
import { Leasehold } from 'leasehold';

const holder = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL, else 127.0.0.1:6379
const waiter = await Leasehold.connect({ ttl: 5_000, lowLatency: { interval: 2, window: 1_000 } });

const held = await holder.acquire('example:low-latency');
const waiting = waiter.acquire('example:low-latency');
await new Promise((resolve) => setTimeout(resolve, 200)); // the waiter idles, warm, meanwhile
const released = performance.now();
await held.release();
const lease = await waiting;
console.log(
  `handed over in ${(performance.now() - released).toFixed(2)} ms (fencing token ${lease.fencingToken})`,
);
await lease.release();

await holder.close();
await waiter.close();
