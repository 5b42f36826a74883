// Acquire + release on free locks inside a worker: the loop of the uncontended, cluster and budget
// scenarios. Bytes allocated are counted with v8.GCProfiler: Node 24's v8.getHeapStatistics() has
// no total_allocated_bytes, and a plain heapUsed delta loses whatever a scavenge frees in the middle
// of the batch (at 64 in flight there are dozens). The profiler reports every GC's used heap before
// and after, so what each one freed is added back: allocated = used(end) - used(start) + sum(freed).
// That counts the JS heap only (a Buffer's backing store lives outside it), exactly enough to see a
// new object per acquire; it needs no --expose-gc and no forced GC that would itself skew the CPU.
import v8 from 'node:v8';
import type { ContenderClient } from '../contenders/types.ts';
import { summarize } from '../lib/stats.ts';
import type { PairsRequest, PairsResult } from './protocol.ts';

/**
 * Work added to this tree's side of the budget on purpose, to show that the check fails
 * (docs/benchmarks.md, "The hot-path budget"): BENCH_INJECT_BYTES allocates that many bytes per
 * pair, BENCH_INJECT_CPU_US spins that many microseconds per pair. Never applied to a baseline
 * build, and read only here: src/ knows nothing of it.
 */
const injectBytes = Number(process.env['BENCH_INJECT_BYTES'] ?? 0);
const injectCpu = Number(process.env['BENCH_INJECT_CPU_US'] ?? 0) / 1000;
let sink: unknown;

function inject(): void {
  if (injectBytes > 0) sink = new Array(Math.ceil(injectBytes / 8)).fill(0);
  if (injectCpu > 0) {
    const until = performance.now() + injectCpu;
    while (performance.now() < until);
  }
}

export async function pairs(
  client: ContenderClient,
  req: PairsRequest,
  me: number,
  injected: boolean,
): Promise<PairsResult> {
  const name = (lane: number) => `${req.tag}:p${me}:l${lane}`;
  const run = async (count: number | undefined, until: number, samples: number[] | undefined) => {
    let left = count ?? Number.POSITIVE_INFINITY;
    await Promise.all(
      Array.from({ length: req.lanes }, async (_, lane) => {
        while (left > 0 && performance.now() < until) {
          left--;
          const started = performance.now();
          const lease = await client.acquire(name(lane), { ttl: req.ttl });
          if (injected) inject();
          await lease.release();
          samples?.push(performance.now() - started);
        }
      }),
    );
  };
  if (req.warmup !== undefined || req.warmupMs !== undefined)
    await run(req.warmup, performance.now() + (req.warmupMs ?? Number.POSITIVE_INFINITY), undefined);
  const samples: number[] = [];
  const profiler = req.allocations ? new v8.GCProfiler() : undefined;
  const heap0 = v8.getHeapStatistics().used_heap_size;
  profiler?.start();
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await run(req.count, started + (req.ms ?? Number.POSITIVE_INFINITY), samples);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const heap1 = v8.getHeapStatistics().used_heap_size;
  let freed = 0;
  for (const gc of profiler?.stop()?.statistics ?? [])
    freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  void sink;
  return {
    pairs: samples.length,
    seconds,
    latency: summarize(samples),
    cpu: (cpu.user + cpu.system) / 1000,
    ...(profiler === undefined ? {} : { allocated: heap1 - heap0 + freed }),
  };
}
