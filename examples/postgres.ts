// leasehold on PostgreSQL: the same API, woken and told of loss by LISTEN/NOTIFY.
// Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx examples/postgres.ts
// (the table is created on first use; `npx leasehold migrate --postgres <url>` does it ahead).
import { Leasehold, LockLostError } from 'leasehold';

const postgres = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Two instances stand in for two processes; both use the same database.
const [a, b] = await Promise.all([
  Leasehold.connect({ postgres, ttl: 5_000 }),
  Leasehold.connect({ postgres, ttl: 5_000 }),
]);
console.log('notifications:', a.notifications); // 'tracking': LISTEN/NOTIFY proven by the canary

const first = await a.acquire('example:report');
const waiting = b.acquire('example:report'); // asleep until a NOTIFY says the row changed
const released = performance.now();
await first.release();
const second = await waiting;
console.log(
  `handed over in ${(performance.now() - released).toFixed(1)} ms, token ${second.fencingToken} > ${first.fencingToken}`,
);

// A takeover is heard by push: the holder's signal aborts at once, not at its next renewal.
const taken = performance.now();
const forced = await a.forceAcquire('example:report');
await new Promise((resolve) => second.signal.addEventListener('abort', resolve, { once: true }));
console.log(
  `holder told after ${(performance.now() - taken).toFixed(1)} ms:`,
  second.signal.reason instanceof LockLostError,
);
await forced.release();

// Every primitive works the same way on PostgreSQL.
const permit = await a.semaphore('example:uploads', { limit: 2 }).acquire();
await permit.release();
await Promise.all([a.close(), b.close()]);
