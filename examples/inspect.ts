// Inspection: who holds what, since when, and who waits, as Redis has it.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/inspect.ts
// Then watch it live: npx leasehold top example: (or npx leasehold dashboard example:)
import { Leasehold } from 'leasehold';

// Every lease carries an owner: the instance's (default host:pid:process title), or its own.
const api = await Leasehold.connect({ ttl: 5_000, owner: 'api-1' });
const billing = await Leasehold.connect({ ttl: 5_000, owner: 'billing-worker-3' });

const report = await api.acquire('example:report');
const purge = await billing.acquire('example:purge', { owner: 'billing-worker-3/purge' });
const payouts = billing.fairLock('example:payouts');
const turn = await payouts.acquire();
const waiting = api
  .fairLock('example:payouts')
  .acquire({ timeout: 1_000 })
  .catch(() => undefined);
await new Promise((resolve) => setTimeout(resolve, 50));

// One name: holders with owner, since, ttlLeft and fencing token; waiters where Redis keeps them.
const state = await api.inspect('example:report');
console.log(`${state?.name} held by ${state?.holders[0]?.owner}, ${state?.holders[0]?.ttlLeft} ms left`);

// Every name under a prefix (SCAN, bounded by limit).
for (const lock of await api.list({ prefix: 'example:' })) {
  const holder = lock.holders[0];
  const waiters = lock.waiters?.map((w) => w.owner).join(', ') ?? 'not recorded';
  console.log(
    `${lock.primitive.padEnd(9)} ${lock.name.padEnd(16)} ${holder?.owner ?? 'free'}` +
      ` (fencing token ${holder?.fencingToken ?? '-'}) waiters: ${waiters}`,
  );
}

await Promise.all([report.release(), purge.release(), turn.release()]);
await (await waiting)?.release();
await Promise.all([api.close(), billing.close()]);
