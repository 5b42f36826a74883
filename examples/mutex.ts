// The mutex: one holder at a time across processes, a signal that aborts the moment the lock is
// lost, and a fencing token for what the lock protects.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/mutex.ts
import { Leasehold, LockTimeoutError } from 'leasehold';

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL, else 127.0.0.1:6379
const other = await Leasehold.connect({ ttl: 5_000 }); // stands in for another process

// withLock: acquire, run, release (also when the function throws).
const rows = await lh.withLock('example:report', async (lease) => {
  console.log(`holding example:report with fencing token ${lease.fencingToken}`);
  return 42;
});
console.log(`the report wrote ${rows} rows`);

// tryAcquire: one attempt; undefined while someone else holds the lock.
const held = await lh.acquire('example:report');
console.log('tryAcquire while held:', await other.tryAcquire('example:report'));
try {
  await other.acquire('example:report', { timeout: 200 });
} catch (error) {
  if (error instanceof LockTimeoutError) console.log(`acquire gave up: ${error.code}`);
}

// A takeover (or a DEL, a FLUSHALL, a dropped connection) aborts the holder's signal at once.
held.signal.addEventListener('abort', () =>
  console.log(`the first holder heard: ${held.signal.reason.message}`),
);
const taken = await other.forceAcquire('example:report');
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(`taken over with fencing token ${taken.fencingToken} > ${held.fencingToken}`);
await taken.release();

await lh.close();
await other.close();
