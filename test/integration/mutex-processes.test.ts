import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mode, tracking, uniquePrefix } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

const PROCESSES = 8;
// Polling hands over only at poll ticks; fewer sections keep that run short.
const ITERATIONS = tracking ? 200 : 40;

test(`${PROCESSES} processes x ${ITERATIONS} critical sections: no overlap, fencing tokens in entry order (${mode})`, async () => {
  const prefix = uniquePrefix('procs');
  const file = new URL('./workers/mutex-worker.ts', import.meta.url).pathname;
  const workers = await Promise.all(
    Array.from({ length: PROCESSES }, () =>
      Worker.start(file, { args: [server.url, prefix, 'shared', String(ITERATIONS)] }),
    ),
  );
  try {
    await Promise.all(workers.map((w) => w.next((m) => m['type'] === 'ready', 30_000)));
    for (const w of workers) w.send({ type: 'go' });
    const done = await Promise.all(workers.map((w) => w.next((m) => m['type'] === 'done', 120_000)));
    assert.deepEqual(
      done.map((m) => m['overlaps']),
      workers.map(() => 0),
    );
    const log = (await command(server.port, ['LRANGE', `${prefix}:check:log`, '0', '-1'])) as string[];
    assert.equal(log.length, PROCESSES * ITERATIONS);
    const tokens = log.map((entry) => BigInt(entry.split(' ')[0]!));
    for (let i = 1; i < tokens.length; i++) {
      assert.ok(tokens[i]! > tokens[i - 1]!, `entry ${i}: token ${tokens[i]} after ${tokens[i - 1]}`);
    }
    const pids = new Set(log.map((entry) => entry.split(' ')[1]));
    assert.equal(pids.size, PROCESSES, 'every process got in');
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
});
