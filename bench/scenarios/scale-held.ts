// The held-leases curve: N leases on distinct names held by one fresh worker process (with
// --expose-gc), automatic extension running; memory per lease, and what one renewal cycle costs
// Redis and the client. A cycle is measured, not assumed: the window's extension calls divided by N.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from '../contenders/types.ts';
import { type Bench, delta } from '../lib/redis.ts';
import { Worker } from '../lib/workers.ts';
import type { CpuSample, MemorySample } from '../workers/protocol.ts';
import { lockName } from './context.ts';

export interface HeldSettings {
  leases: number[];
  ttl: number;
  /** After the last acquisition, before the window: every lease's first extension is behind it. */
  warmupMs: number;
  windowMs: number;
  /** Acquisitions in flight while taking the N leases. */
  concurrency: number;
  /** Wall-clock cap on taking the N leases; a contender over it is recorded as capped. */
  acquireCapMs: number;
  /** Wall-clock cap on releasing them (releaseMs is NaN past it). */
  releaseCapMs: number;
  /** Largest N per contender (the rest are not run and the table says so). */
  limits: Record<string, number>;
}

export interface HeldCell {
  contender: string;
  leases: number;
  acquireMs: number;
  /**
   * JS heap + array buffers per lease after forced GCs: the smaller of two samples (right after
   * taking the leases, right after the window); the larger one in heapPerLeaseMax. They differ by
   * what a renewal batch in flight holds (at 100k leases one is under way most of the time).
   */
  heapPerLease: number;
  heapPerLeaseMax: number;
  rssPerLease: number;
  redisMemoryPerLease: number;
  /** Extension calls (scripts) per second in the window. */
  extensionsPerSecond: number;
  /** N / extensionsPerSecond: how often each lease is extended, ms. */
  cycleMs: number;
  /** Per renewal cycle (all N leases extended once). */
  perCycle: { redisCpuMs: number; clientCpuMs: number; reads: number; commands: number; bytes: number };
  /** Redis's own time per extension call (INFO commandstats usec of the script calls). */
  redisUsecPerExtension: number;
  clientUsecPerExtension: number;
  /** Leases whose loss signal fired by the end of the window (should be 0). */
  lost: number;
  /** NaN: not done within releaseCapMs. */
  releaseMs: number;
}

export type HeldOutcome = HeldCell | { contender: string; leases: number; skipped: string };

export async function heldCell(
  bench: Bench,
  contender: Contender,
  leases: number,
  settings: HeldSettings,
): Promise<HeldOutcome> {
  const limit = settings.limits[contender.id];
  if (limit !== undefined && leases > limit)
    return { contender: contender.id, leases, skipped: `not run above ${limit.toLocaleString('en-US')}` };
  // A fresh process per cell: no earlier cell's (or library's) leftovers in its heap.
  const worker = await Worker.spawn(500, { gc: true });
  try {
    await worker.call({ cmd: 'init', contender: contender.id, url: bench.url });
    const memBefore = await worker.call<MemorySample>({ cmd: 'mem' });
    const redisBefore = await bench.counters();
    const names = Array.from({ length: leases }, (_, i) => lockName('scaling-held', contender.id, leases, i));
    const holding = worker.hold(contender.id, names, settings.ttl, 0, settings.concurrency);
    holding.catch(() => {});
    const hold = await Promise.race([holding, sleep(settings.acquireCapMs).then(() => undefined)]);
    if (hold === undefined)
      return {
        contender: contender.id,
        leases,
        skipped: `taking ${leases.toLocaleString('en-US')} leases took over ${settings.acquireCapMs / 1000} s`,
      };
    // Two heap samples, each after two forced full GCs: right after taking the leases and right
    // after the window. A forced GC of a heap this size stops the process long enough to matter
    // at 100k leases (more samples made every lease's validity lapse), hence only two, and the
    // second one after `lost` is read.
    const heapOf = (m: MemorySample) =>
      m.heapUsed + m.arrayBuffers - memBefore.heapUsed - memBefore.arrayBuffers;
    const first = await worker.call<MemorySample>({ cmd: 'mem' });
    const redisHeld = await bench.counters();
    await sleep(settings.warmupMs);
    const cpu0 = await worker.call<CpuSample>({ cmd: 'cpu' });
    const a = await bench.counters();
    await sleep(settings.windowMs);
    const b = await bench.counters();
    const cpu1 = await worker.call<CpuSample>({ cmd: 'cpu' });
    const lost = await worker.call<number>({ cmd: 'lost' });
    const second = await worker.call<MemorySample>({ cmd: 'mem' });
    const [memAfter, memHigh] = heapOf(first) <= heapOf(second) ? [first, second] : [second, first];
    // A library whose release of a lost lease retries for seconds (redlock: retryCount x retryDelay)
    // would hold the run for an hour at 100k: capped, and the process is killed below anyway.
    const releasing = worker.call<{ ms: number }>({ cmd: 'releaseAll' });
    releasing.catch(() => {});
    const released = await Promise.race([releasing, sleep(settings.releaseCapMs).then(() => undefined)]);
    const d = delta(a, b);
    const clientCpuMs = cpu1.cpu - cpu0.cpu;
    const cycles = d.scripts / leases;
    const extensionsPerSecond = d.scripts / (d.ms / 1000);
    return {
      contender: contender.id,
      leases,
      acquireMs: hold.ms,
      heapPerLease: heapOf(memAfter) / leases,
      heapPerLeaseMax: heapOf(memHigh) / leases,
      rssPerLease: (memAfter.rss - memBefore.rss) / leases,
      redisMemoryPerLease: (redisHeld.usedMemory - redisBefore.usedMemory) / leases,
      extensionsPerSecond,
      cycleMs: (leases / extensionsPerSecond) * 1000,
      perCycle: {
        redisCpuMs: d.cpuMs / cycles,
        clientCpuMs: clientCpuMs / cycles,
        reads: d.reads / cycles,
        commands: d.commands / cycles,
        bytes: d.inputBytes / cycles,
      },
      redisUsecPerExtension: d.scriptUsec / d.scripts,
      clientUsecPerExtension: (clientCpuMs * 1000) / d.scripts,
      lost,
      releaseMs: released?.ms ?? Number.NaN,
    };
  } finally {
    await worker.kill();
  }
}
