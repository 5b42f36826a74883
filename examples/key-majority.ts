// A lock that survives losing one shard's copy: on Redis Cluster, keyMajority: 3 keeps each lock
// name as 3 keys on 3 masters and holds it while a majority of them is held. A failover whose
// promoted replica missed the write (async replication) loses one key, not the lease; the next
// extension puts the key back.
// Run against a cluster: REDIS_CLUSTER=redis://127.0.0.1:7000 node --import tsx examples/key-majority.ts
import { Leasehold } from 'leasehold';

const rootNode = process.env['REDIS_CLUSTER'] ?? 'redis://127.0.0.1:7000';
const connect = () => Leasehold.connect({ cluster: { rootNodes: [rootNode], keyMajority: 3 }, ttl: 2_000 });
const lh = await connect();
const other = await connect(); // stands in for another process

const lease = await lh.acquire('example:payouts');
console.log(`held with fencing token ${lease.fencingToken} (3 keys, a majority of 2 needed)`);

// Another process waits; the release wakes it at once (an invalidation push from any key).
const waiting = other.acquire('example:payouts', { timeout: 5_000 });
await lease.release();
const next = await waiting;
console.log(`the other process took over with fencing token ${next.fencingToken}`);
await next.release();

// Every other primitive keeps one key per name on the cluster, as without keyMajority.
await using permit = await lh.semaphore('example:uploads', { limit: 2 }).acquire();
console.log(`semaphore permit ${permit.fencingToken} on one key`);

await Promise.all([lh.close(), other.close()]);
