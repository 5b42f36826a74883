// The commands a process issues in one turn of the event loop reach Redis in a few writes, on both
// drivers: node-redis writes a turn in one, ioredis in writes of 8 (src/driver/tick-writes.ts). Redis
// counts its socket reads (INFO total_reads_processed); one write per command made it read them
// one by one, and each read and write is a system call on both sides.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { info } from '../harness/resp.ts';

const redis = useRedis();

test(`64 acquisitions started in one turn reach Redis in a few reads, not one by one (${mode})`, async () => {
  const lh = await redis.instance(uniquePrefix('turn'), 10_000);
  // Scripts loaded, connections settled: only the burst below is counted.
  await (await lh.tryAcquire('warm-up'))?.release();
  const reads = async () => Number((await info(redis.server.port, 'stats'))['total_reads_processed']);
  const before = await reads();
  const leases = await Promise.all(Array.from({ length: 64 }, (_, i) => lh.tryAcquire(`n${i}`)));
  // Less the INFO that read `before` (its connection is new each time: one read).
  const used = (await reads()) - before - 1;
  assert.ok(leases.every((lease) => lease !== undefined));
  // At most 8 writes (ioredis; node-redis: 1), each read whole: one by one took 28 reads here.
  assert.ok(used <= 10, `Redis needed ${used} reads for 64 acquisitions issued in one turn`);
  await Promise.all(leases.map((lease) => lease?.release()));
});
