import type { ContenderClient, Held } from '../contenders/types.ts';
import { Bench, type Counters, type Rates } from '../lib/redis.ts';
import { Worker } from '../lib/workers.ts';
import type { CpuSample, HoldResult, MemorySample, WaitResult } from '../workers/protocol.ts';
import { type Context, guard, inPool, lockName } from './context.ts';

export interface ScaleHeld extends Rates {
  leases: number;
  acquireMs: number;
  releaseMs: number;
  /** Leases whose loss signal fired while held (should be 0). */
  lost: number;
  heapPerLease: number;
  rssPerLease: number;
  redisMemoryPerLease: number;
  processCpuPercent: number;
}

export interface ScaleWaiters extends Rates {
  waiters: number;
  heapPerWaiter: number;
  rssPerWaiter: number;
  processCpuPercent: number;
  /** Waiters that got a lock that was held all along (should be 0; NaN: not known in time). */
  acquired: number;
}

export interface ScaleResult {
  redisVersion: string;
  settings: Record<string, number>;
  contenders: Record<string, { held: ScaleHeld; waiters: ScaleWaiters }>;
}

const sleep = (t: number) => new Promise((resolve) => setTimeout(resolve, t));
const cpuPercent = (a: CpuSample, b: CpuSample) => ((b.cpu - a.cpu) / (b.t - a.t)) * 100;
const mib = (bytes: number) => `${(bytes / 1024).toFixed(2)} KiB`;

/**
 * The least of the memory samples taken every 250 ms for `ms` (each after two full GCs): what the
 * held leases keep. One sample right after the acquisitions counted whatever renewal batch was in
 * flight at that moment (with a 3 s ttl the first batch falls due while the last leases are still
 * being taken): leasehold's heap per lease read 1.62 or 2.7-2.9 KiB from run to run, depending on
 * whether the 10,000 acquisitions took more or less than about 0.8 s.
 */
async function leastMemory(worker: Worker, ms: number): Promise<MemorySample> {
  const end = performance.now() + ms;
  let least = await worker.call<MemorySample>({ cmd: 'mem' });
  const size = (m: MemorySample) => m.heapUsed + m.arrayBuffers;
  while (performance.now() < end) {
    await sleep(250);
    const next = await worker.call<MemorySample>({ cmd: 'mem' });
    least = {
      ...(size(next) < size(least) ? next : least),
      rss: Math.min(next.rss, least.rss),
    };
  }
  return least;
}

/** 10,000 leases held by one process: extension load, CPU, memory per lease. */
async function held(ctx: Context, bench: Bench, worker: Worker, id: string): Promise<ScaleHeld> {
  const cfg = ctx.config.scale;
  const before = await worker.call<MemorySample>({ cmd: 'mem' });
  const redisBefore: Counters = await bench.counters();
  const names = Array.from({ length: cfg.leases }, (_, i) => lockName('scale', id, i));
  const hold = await worker.call<HoldResult>({
    cmd: 'hold',
    contender: id,
    names,
    ttl: cfg.leaseTtl,
    gap: 0,
    concurrency: 64,
  });
  const redisHeld = await bench.counters();
  // Every contender's first extension (and any one-time script loading) happens before the
  // window, which then sees the steady state. Memory is sampled over that warm-up.
  const after = await leastMemory(worker, cfg.warmupMs);
  const cpu0 = await worker.call<CpuSample>({ cmd: 'cpu' });
  const a = await bench.counters();
  await sleep(cfg.windowMs);
  const b = await bench.counters();
  const cpu1 = await worker.call<CpuSample>({ cmd: 'cpu' });
  const released = await worker.call<{ ms: number; lost: number; released: number }>({ cmd: 'releaseAll' });
  const n = cfg.leases;
  return {
    ...Bench.rates(a, b),
    leases: n,
    acquireMs: hold.ms,
    releaseMs: released.ms,
    lost: released.lost,
    heapPerLease: (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / n,
    rssPerLease: (after.rss - before.rss) / n,
    redisMemoryPerLease: (redisHeld.usedMemory - redisBefore.usedMemory) / n,
    processCpuPercent: cpuPercent(cpu0, cpu1),
  };
}

/** 1,000 waiters on distinct names, each held by this process: Redis load and memory per waiter. */
async function waiters(
  ctx: Context,
  bench: Bench,
  worker: Worker,
  client: ContenderClient,
  id: string,
): Promise<ScaleWaiters> {
  const cfg = ctx.config.scale;
  const ttl = 60_000; // long, so that the holder's own extensions stay out of the window
  const names = Array.from({ length: cfg.waiters }, (_, i) => lockName('scale-wait', id, i));
  const leases: Held[] = [];
  await inPool(names, 64, async (name) => {
    leases.push(await client.acquire(name, { ttl }));
  });
  try {
    const before = await worker.call<MemorySample>({ cmd: 'mem' });
    const tag = 'scale-wait';
    const waiting = worker.call<WaitResult>({ cmd: 'wait', contender: id, names, ttl, tag, release: true });
    await sleep(cfg.settleMs);
    const after = await worker.call<MemorySample>({ cmd: 'mem' });
    const cpu0 = await worker.call<CpuSample>({ cmd: 'cpu' });
    const a = await bench.counters();
    await sleep(cfg.waiterWindowMs);
    const b = await bench.counters();
    const cpu1 = await worker.call<CpuSample>({ cmd: 'cpu' });
    worker.notify({ notice: 'abort', tag });
    // Some libraries notice the abort only after their current retry budget (seconds): the worker
    // is stopped right after anyway, so waiting for them is capped.
    waiting.catch(() => {});
    const result = await Promise.race([waiting, sleep(1_000).then(() => undefined)]);
    const n = cfg.waiters;
    return {
      ...Bench.rates(a, b),
      waiters: n,
      heapPerWaiter: (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / n,
      rssPerWaiter: (after.rss - before.rss) / n,
      processCpuPercent: cpuPercent(cpu0, cpu1),
      acquired: result === undefined ? Number.NaN : result.acquired.length,
    };
  } finally {
    await inPool(leases, 64, async (lease) => {
      await lease.release().catch(() => {});
    });
  }
}

/** Scenario 6: many leases in one process, and many waiters on distinct names. */
export async function scale(ctx: Context): Promise<ScaleResult> {
  const cfg = ctx.config.scale;
  const bench = await Bench.start();
  try {
    const contenders: ScaleResult['contenders'] = {};
    for (const c of ctx.contenders) {
      // One fresh worker per contender: no other library's leftovers in its heap.
      const worker = await Worker.spawn(400, { gc: true });
      try {
        await guard(ctx, 'scale', c.id, async () => {
          await worker.call({ cmd: 'init', contender: c.id, url: bench.url });
          const h = await held(ctx, bench, worker, c.id);
          ctx.log(
            `  scale ${c.id}: ${h.leases} leases: ${h.commandsPerSecond.toFixed(0)} commands/s, ` +
              `${h.readsPerSecond.toFixed(0)} reads/s, cpu ${h.processCpuPercent.toFixed(1)} %, ` +
              `${mib(h.heapPerLease)} heap per lease, lost ${h.lost}`,
          );
          const client = await c.connect(bench.url);
          try {
            const w = await waiters(ctx, bench, worker, client, c.id);
            ctx.log(
              `  scale ${c.id}: ${w.waiters} waiters: ${w.commandsPerSecond.toFixed(0)} commands/s, ` +
                `cpu ${w.processCpuPercent.toFixed(1)} %, ${mib(w.heapPerWaiter)} heap per waiter`,
            );
            contenders[c.id] = { held: h, waiters: w };
          } finally {
            await client.close();
          }
        });
      } finally {
        await worker.stop();
      }
    }
    return { redisVersion: await bench.version(), settings: { ...cfg }, contenders };
  } finally {
    await bench.stop();
  }
}
