// Acquire + release throughput on the in-memory backend: `node --import tsx bench/memory.ts`.
// One Leasehold on its own MemoryBackend; `sequential` awaits each pair, `parallel` keeps 64 pairs
// (on distinct names) in flight. Prints ops/s (one op = one acquire plus its release), the median
// of 5 rounds after a warm-up round, as JSON.
import { Leasehold, MemoryBackend } from '../src/index.ts';

const ROUNDS = 5;
const OPS = 20_000;
const IN_FLIGHT = 64;

async function pair(lh: Leasehold, name: string): Promise<void> {
  const lease = await lh.tryAcquire(name);
  if (lease === undefined) throw new Error(`${name} was not free`);
  await lease.release();
}

async function sequential(lh: Leasehold): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < OPS; i++) await pair(lh, 'seq');
  return OPS / ((performance.now() - started) / 1000);
}

async function parallel(lh: Leasehold): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      for (let i = lane; i < OPS; i += IN_FLIGHT) await pair(lh, `par:${lane}`);
    }),
  );
  return OPS / ((performance.now() - started) / 1000);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

const lh = await Leasehold.connect({ backend: new MemoryBackend(), prefix: 'bench' });
try {
  const result: Record<string, number> = {};
  for (const [label, run] of [
    ['sequential', sequential],
    ['parallel', parallel],
  ] as const) {
    await run(lh);
    const samples: number[] = [];
    for (let r = 0; r < ROUNDS; r++) samples.push(await run(lh));
    result[label] = Math.round(median(samples));
  }
  console.log(JSON.stringify({ node: process.version, opsPerSecond: result }));
} finally {
  await lh.close();
}
