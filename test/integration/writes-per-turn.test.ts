// The commands a process issues in one turn of the event loop reach Redis in a few writes, the
// first of 8 commands and each next one twice the one before (8, 16, 32, ...), on both drivers (ioredis: src/driver/tick-writes.ts, node-redis:
// src/driver/paced-sends.ts). Redis counts its socket reads (INFO total_reads_processed); one write
// per command made it read them one by one, and each read and write is a system call on both
// sides. One write for the whole turn left Redis idle while the process issued it.
import assert from 'node:assert/strict';
import net, { type Socket } from 'node:net';
import { test } from 'node:test';
import { mode, testDriver, uniquePrefix, useRedis } from '../harness/leasehold.ts';
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
  // Writes of 8, 16, 32 and the last 8, each read whole: one by one took 28 reads here.
  assert.ok(used <= 10, `Redis needed ${used} reads for 64 acquisitions issued in one turn`);
  await Promise.all(leases.map((lease) => lease?.release()));
});

/**
 * Records the text of each write to a Redis socket of this process that reached the kernel: what
 * was written between two uncorks (both clients cork around a write), or a lone write on an
 * uncorked socket. It wraps net.Socket's prototype, not the sockets: node-redis calls the
 * prototype's write, whatever a socket's own property says.
 */
function recordWrites(port: number): { writes: string[]; stop: () => void } {
  const writes: string[] = [];
  const pending = new Map<Socket, string[]>();
  const { write, uncork } = net.Socket.prototype;
  net.Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (this.remotePort === port) {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('latin1');
      if (this.writableCorked > 0) pending.set(this, [...(pending.get(this) ?? []), text]);
      else writes.push(text);
    }
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  net.Socket.prototype.uncork = function (this: Socket) {
    const parts = pending.get(this);
    if (this.writableCorked === 1 && parts !== undefined) {
      writes.push(parts.join(''));
      pending.delete(this);
    }
    uncork.call(this);
  };
  const stop = () => {
    net.Socket.prototype.write = write;
    net.Socket.prototype.uncork = uncork;
  };
  return { writes, stop };
}

test(`64 acquisitions started in one turn leave in writes of 8, 16, 32 and the rest (${mode})`, {
  // Counted on node:net sockets: GLIDE writes from its Rust core, where this cannot see.
  skip: testDriver === 'glide' ? "GLIDE's writes leave from its Rust core, not node:net" : false,
}, async () => {
  const prefix = uniquePrefix('paced');
  const lh = await redis.instance(prefix, 10_000);
  await (await lh.tryAcquire('warm-up'))?.release();
  const recorder = recordWrites(redis.server.port);
  let leases: Awaited<ReturnType<typeof lh.tryAcquire>>[];
  try {
    leases = await Promise.all(Array.from({ length: 64 }, (_, i) => lh.tryAcquire(`n${i}`)));
  } finally {
    recorder.stop();
  }
  assert.ok(leases.every((lease) => lease !== undefined));
  // Each acquisition is one EVALSHA naming its lock key, `<prefix>:{n<i>}`.
  const perWrite = recorder.writes
    .map((text) => text.match(new RegExp(`${prefix}:\\{n\\d+\\}\r\n`, 'g'))?.length ?? 0)
    .filter((count) => count > 0);
  assert.equal(
    perWrite.reduce((a, b) => a + b, 0),
    64,
    `every acquisition written once (writes: ${perWrite})`,
  );
  // The first write carries 8 (Redis starts at once), each next one at most twice the one before.
  assert.ok(perWrite[0]! <= 8, `the first write carries at most 8 acquisitions, got ${perWrite}`);
  for (let i = 1; i < perWrite.length; i++)
    assert.ok(perWrite[i]! <= 8 * 2 ** i, `write ${i + 1} carries at most ${8 * 2 ** i}, got ${perWrite}`);
  assert.ok(perWrite.length <= 6, `about 4 writes, got ${perWrite.length}: ${perWrite}`);
  await Promise.all(leases.map((lease) => lease?.release()));
});
