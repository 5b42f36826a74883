// release() racing an automatic renewal: a renewal whose timer fires after release() was sent
// finds the key gone, which is the release's doing. The lease must end as released (signal
// reason LockReleasedError, release() true), never as lost, and no 'lost' event may fire.
// Latency through the fault proxy keeps each release in flight long enough for renewals to
// land inside it; hundreds of releases at random points around the renewal times hit it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Lease, LockReleasedError } from '../../src/index.ts';
import { connect, mode, uniquePrefix, useRedis } from '../harness/leasehold.ts';

const redis = useRedis({ proxy: true });

// 1500 ms, not less: every lease's validity must outlast a stall of the loaded machine (this file's
// process also runs the proxy and 300 leases; CI runs two files at once). At 150 ms the first
// leases of the burst lost their validity before any renewal came back (CI rehearsal, ioredis,
// one run in three); at 600 ms CI still saw a failure once in a full run beside the CLI files,
// which start processes (a renewal has TTL - TTL/3 to come back: 400 ms was not always enough).
// The latency scales with it, so each release stays in flight for a tenth of a renewal interval.
const TTL = 1_500;
const LATENCY = 25;
const LEASES = 300;

describe(`release() racing renewals (${mode})`, () => {
  test(`${LEASES} releases timed into renewals: none is lost, every signal says released`, async () => {
    const lh = await connect(redis.server, { url: redis.proxy.url, prefix: uniquePrefix('race'), ttl: TTL });
    const lost: unknown[] = [];
    let extended = 0;
    lh.on('lost', (event) => lost.push(event));
    lh.on('extended', () => {
      extended += 1;
    });
    // Closed whatever happens: a failed assertion must not leave a client reconnecting to the
    // stopped proxy, which keeps this file's process alive (CI: the whole run hung on it).
    try {
      redis.proxy.setLatency(LATENCY);
      // Renewals run from about TTL/6 after the acquisition, every TTL/3 after that: release at
      // random points across the first three renewal rounds.
      const releaseAt = () => TTL / 8 + Math.random() * TTL;
      const outcomes = await Promise.all(
        Array.from({ length: LEASES }, async (_, i) => {
          await sleep(Math.floor(i / 10));
          const lease: Lease = await lh.acquire(`n${i}`, { timeout: 5_000 });
          await sleep(releaseAt());
          const released = await lease.release();
          return { lease, released };
        }),
      );
      redis.proxy.setLatency(0);
      assert.ok(extended > LEASES / 4, `renewals ran during the releases (${extended})`);
      assert.deepEqual(lost, [], 'no lease was reported lost');
      for (const { lease, released } of outcomes) {
        assert.equal(released, true, `${lease.name}: release() found the lock held`);
        assert.ok(lease.signal.reason instanceof LockReleasedError, `${lease.name}: ${lease.signal.reason}`);
        assert.equal(lease.lost, false);
      }
      // A second release has nothing left to release.
      assert.equal(await outcomes[0]?.lease.release(), false);
    } finally {
      redis.proxy.setLatency(0);
      await lh.close();
    }
  });
});
