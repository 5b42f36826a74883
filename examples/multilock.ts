// Several names at once: a transfer locks both accounts, all or none, and never deadlocks against
// a transfer the other way round. Each name is the same lock lh.acquire(name) takes.
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/multilock.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold } from 'leasehold';

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL, else 127.0.0.1:6379
const other = await Leasehold.connect({ ttl: 5_000 }); // stands in for another process

// Two transfers in opposite directions, ten times each: both ask for both accounts, in their own
// order. Every multiLock takes names in one global order and gives back what it took when a
// name is busy, so neither can end up holding one account while waiting for the other.
async function transfers(client: Leasehold, from: string, to: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await using both = await client.multiLock([from, to]).acquire({ timeout: 10_000 });
    // One fencing token per name, for whatever each name protects.
    const fences = [...both.fencingTokens].map(([name, fence]) => `${name}=${fence}`).join(' ');
    if (i === 0) console.log(`${from} -> ${to}: holding ${fences}`);
    await sleep(2, undefined, { signal: both.signal });
  }
  console.log(`${from} -> ${to}: 10 transfers done`);
}
await Promise.all([
  transfers(lh, 'example:account:1', 'example:account:2'),
  transfers(other, 'example:account:2', 'example:account:1'),
]);

// A plain mutex holder of one name keeps the whole set out: nothing is taken meanwhile.
const one = await other.acquire('example:account:2');
console.log(
  'tryAcquire while account:2 is held:',
  await lh.multiLock(['example:account:1', 'example:account:2']).tryAcquire(),
);
const waiting = lh.multiLock(['example:account:1', 'example:account:2']).acquire({ timeout: 5_000 });
await sleep(50);
await one.release(); // the waiter wakes at once (an invalidation push), not at the 5 s TTL
const both = await waiting;
console.log(`acquired both after the release; fencingToken (the largest) ${both.fencingToken}`);
await both.release();

await lh.close();
await other.close();
