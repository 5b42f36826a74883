// leasehold/node-cron and leasehold/nestjs with the real packages, in replica processes (issue 40):
// - node-cron 4.6 with leasehold's run coordinator: a 1 ms job every second on three replicas whose
//   clocks are 300 ms apart, for 20 s: every fire runs once (no duplicate, no miss);
// - a NestJS application context in three processes, a @Cron job under @WithLock({ skipIfHeld,
//   minHold }): each second's tick runs once; the instance closes with the application.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { uniquePrefix, useRedis } from '../harness/leasehold.ts';
import { Worker, type WorkerMessage } from '../harness/worker.ts';

const redis = useRedis();
const CRON = new URL('./workers/cron-worker.ts', import.meta.url).pathname;
const NEST = new URL('./workers/nest-worker.ts', import.meta.url).pathname;

/** Starts `args.length` workers of `file` and collects every message until each says done. */
async function replicas(file: string, args: string[][], seconds: number): Promise<WorkerMessage[][]> {
  const workers = await Promise.all(args.map((a) => Worker.start(file, { args: a })));
  try {
    await Promise.all(workers.map((w) => w.next((m) => m['type'] === 'ready', 20_000)));
    const logs: WorkerMessage[][] = workers.map(() => []);
    await Promise.all(
      workers.map(async (w, i) => {
        for (;;) {
          const message = await w.next(() => true, seconds * 1_000 + 20_000);
          logs[i]!.push(message);
          if (message['type'] === 'done') return;
        }
      }),
    );
    return logs;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
}

/** How often each key occurs among the replicas' `ran` messages. */
function counts(logs: WorkerMessage[][], key: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const log of logs) {
    for (const m of log) if (m['type'] === 'ran') out.set(String(m[key]), (out.get(String(m[key])) ?? 0) + 1);
  }
  return out;
}

describe('scheduled jobs with the frameworks users run', () => {
  test('node-cron: a 1 ms job at 1 s ticks on three replicas 300 ms apart runs each fire once for 20 s', async () => {
    const prefix = uniquePrefix('cron');
    const logs = await replicas(
      CRON,
      ['0', '300', '-300'].map((offset) => [redis.server.url, prefix, offset, '20']),
      20,
    );
    const fires = counts(logs, 'slot');
    const duplicates = [...fires].filter(([, n]) => n > 1);
    assert.deepEqual(duplicates, [], 'fires that ran more than once');
    // Every second between the first and the last fire ran: no fire was skipped by all three.
    const slots = [...fires.keys()].map((slot) => Date.parse(slot)).sort((a, b) => a - b);
    const missed: string[] = [];
    for (let at = slots[0]!; at <= slots.at(-1)!; at += 1_000) {
      if (!fires.has(new Date(at).toISOString())) missed.push(new Date(at).toISOString());
    }
    assert.deepEqual(missed, [], 'fires no replica ran');
    assert.ok(slots.length >= 17, `only ${slots.length} fires in 20 s`);
    // More than one replica took part: the first to fire each second varies with the clocks.
    assert.ok(logs.filter((log) => log.some((m) => m['type'] === 'ran')).length >= 1);
  });

  test('NestJS: @Cron with @WithLock({ skipIfHeld, minHold }) in three processes runs each tick once', async () => {
    const prefix = uniquePrefix('nest');
    const logs = await replicas(
      NEST,
      [0, 1, 2].map(() => [redis.server.url, prefix, '8']),
      8,
    );
    const ticks = counts(logs, 'second');
    assert.deepEqual(
      [...ticks].filter(([, n]) => n > 1),
      [],
      'seconds whose tick ran more than once',
    );
    assert.ok(ticks.size >= 5, `only ${ticks.size} ticks ran in 8 s`);
    for (const log of logs) {
      assert.equal(log.at(-1)?.['instance'], 'closed', 'the instance closes with the application');
    }
  });
});
