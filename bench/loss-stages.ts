// Where a holder's loss detection spends its time (issue 27, "loss detection p99 <= 2 ms"):
// `npm run bench:loss-stages -- [--samples=400] [--held=200] [--ttl=30000]` (about 15 s).
//
// The pattern of the bench's loss scenario (bench/scenarios/loss.ts): one process holds `held`
// leases and every 8 ms, the process idle between, another connection deletes one of their keys.
// With the default ttl (30 s) no renewal falls in the window; `--ttl=2000`, the bench's, renews
// all of them together every 667 ms, and a DEL that arrives during such a batch waits for it.
// Measured, per sample, on both drivers:
//   push    from the DEL's send to the push reaching the lease (leasehold's renewer is asked to
//           verify it: Renewer.verifySoon, wrapped here to note the time)
//   verify  from there to the lease's signal aborting: the verification round trip (a push is not
//           proof of loss: on a quorum one node's push is not a lost majority, and Redis sends
//           pushes for keys it merely drops from its tracking table), its parsing and the abort
// and, in the same run, the floor: the same DEL from a bare socket to the push reaching a bare
// RESP3 socket that tracks the key, with the same idle time between samples. The DEL is sent by
// a bare socket for leasehold too, so that no client library's send path is in the figure.
import { setTimeout as sleep } from 'node:timers/promises';
import { Renewer } from '../src/engine/renewer.ts';
import { type Lease, Leasehold } from '../src/index.ts';
import { RedisServer } from '../test/harness/redis-server.ts';
import { summarize } from './lib/stats.ts';
import { Connection } from './stages/bare.ts';

const arg = (name: string, fallback: number): number => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : Number(found.slice(name.length + 3));
};
const SAMPLES = arg('samples', 400);
const HELD = arg('held', 200);
/** 30 s: no renewal in the window; the bench's 2,000 renews every lease each 667 ms, all at once. */
const TTL = arg('ttl', 30_000);
const GAP_MS = 8;

const show = (label: string, values: number[]): string => {
  const { p50, p99 } = summarize(values);
  return `${label} p50 ${p50.toFixed(3)} p99 ${p99.toFixed(3)} ms`;
};

/** The floor: DEL from a bare socket, the push read by a bare tracking socket. */
async function floor(port: number): Promise<number[]> {
  const tracker = await Connection.open(port);
  const admin = await Connection.open(port);
  await tracker.call(['HELLO', '3']);
  await tracker.call(['CLIENT', 'TRACKING', 'on']);
  const delays: number[] = [];
  try {
    for (let i = 0; i < SAMPLES; i++) {
      await admin.call(['SET', `floor:${i}`, 'v']);
      await tracker.call(['GET', `floor:${i}`]);
      await sleep(GAP_MS);
      const pushed = new Promise<number>((resolve) => {
        tracker.onPush = () => resolve(performance.now());
      });
      const sentAt = performance.now();
      const reply = admin.call(['DEL', `floor:${i}`]);
      delays.push((await pushed) - sentAt);
      await reply;
    }
  } finally {
    tracker.socket.destroy();
    admin.socket.destroy();
  }
  return delays;
}

/** leasehold: `HELD` leases at a time, one deleted every GAP_MS by a bare socket. */
async function leasehold(port: number, driver: 'node-redis' | 'ioredis') {
  const url = `redis://127.0.0.1:${port}`;
  const lh = await Leasehold.connect({ url, driver, prefix: 'stages' });
  const admin = await Connection.open(port);
  const push: number[] = [];
  const verify: number[] = [];
  const total: number[] = [];
  try {
    for (let round = 0; round * HELD < SAMPLES; round++) {
      const names = Array.from(
        { length: Math.min(HELD, SAMPLES - round * HELD) },
        (_, i) => `${driver}-${round}-${i}`,
      );
      const leases = await Promise.all(names.map((name) => lh.acquire(name, { ttl: TTL })));
      for (const [i, lease] of leases.entries()) {
        await sleep(GAP_MS);
        const lost = new Promise<number>((resolve) =>
          lease.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
        );
        const sentAt = performance.now();
        const reply = admin.call(['DEL', `stages:{${names[i]}}`]);
        const lostAt = await lost;
        await reply;
        const heardAt = pushedAt.get(lease) ?? Number.NaN;
        push.push(heardAt - sentAt);
        verify.push(lostAt - heardAt);
        total.push(lostAt - sentAt);
      }
      await Promise.all(leases.map((lease) => lease.release().catch(() => {})));
    }
  } finally {
    admin.socket.destroy();
    await lh.close();
  }
  return { push, verify, total };
}

/** When the renewer was first asked to verify each lease: the moment its push was handled. */
const pushedAt = new WeakMap<Lease, number>();
const verifySoon = Renewer.prototype.verifySoon;
Renewer.prototype.verifySoon = function (this: Renewer, lease: Lease) {
  if (!pushedAt.has(lease)) pushedAt.set(lease, performance.now());
  verifySoon.call(this, lease);
};

const server = await RedisServer.start();
try {
  console.log(
    `loss detection by stage: ${SAMPLES} samples, ${HELD} leases held (ttl ${TTL} ms), one DEL every ${GAP_MS} ms`,
  );
  console.log(`  floor (bare sockets)    ${show('DEL -> push', await floor(server.port))}`);
  for (const driver of ['node-redis', 'ioredis'] as const) {
    const { push, verify, total } = await leasehold(server.port, driver);
    console.log(
      `  leasehold (${driver.padEnd(10)}) ${show('DEL -> push handled', push)}; ${show('verify -> abort', verify)}; ${show('total', total)}`,
    );
  }
} finally {
  await server.stop();
}
