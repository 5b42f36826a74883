// Why the full run and the breakdown disagree on leasehold's uncontended throughput (docs/benchmarks.md,
// "Where the time goes"): the same 64-in-flight acquire + release loop as bench/scenarios/uncontended.ts,
// for leasehold (ioredis) and redis-semaphore, under each setup difference between the two scripts:
//
//   node --import tsx bench/uncontended-setup.ts [--rounds 3] [--window 1500]
//     [--setups alone:parallel,alone:sequential,crowd:sequential] [--measure id,id]
//
//   others    alone: only the measured client is connected (the breakdown);
//             crowd: all five contenders connected to the same server, each having run a round of
//             its own first (the full run's uncontended scenario);
//             peers: the same without the other leasehold driver (leasehold on node-redis), whose
//             instance shares leasehold's compiled code in this process;
//             idle: all five connected, none of the others run anything
//   warm-up   sequential: 100 + 1,000 one-at-a-time pairs, then the window (the full run);
//             parallel: 500 ms of the 64-in-flight loop, then the window (the breakdown)
//   adapter   leasehold-ioredis: the full run's contender adapter (bench/contenders/leasehold.ts),
//             which hands `lease.signal` to the scenario, so every lease makes its AbortController
//             and every release its LockReleasedError; direct: `lh.acquire()` + `lease.release()`
//             and nothing else, as the breakdown calls it
//
// A first round per variant warms the process up and is not counted. Prints pairs/s per cell
// (median over rounds) and the ratio to redis-semaphore in the same setup; writes --out
// (default bench/results/uncontended-setup.json).
import { writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { contender, contenders } from './contenders/index.ts';
import type { ContenderClient } from './contenders/types.ts';
import { compileLeasehold } from './lib/build.ts';
import { machine } from './lib/machine.ts';
import { Bench } from './lib/redis.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    window: { type: 'string', default: '1500' },
    setups: { type: 'string', default: 'alone:parallel,alone:sequential,crowd:sequential' },
    measure: { type: 'string' },
    out: { type: 'string', default: 'bench/results/uncontended-setup.json' },
  },
});
const rounds = Number(values.rounds);
const windowMs = Number(values.window);
const IN_FLIGHT = 64;
const TTL = 10_000;
const DIRECT = 'leasehold-ioredis-direct';
const MEASURED = values.measure?.split(',') ?? ['leasehold-ioredis', DIRECT, 'redis-semaphore'];

const compiled = await compileLeasehold();
if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD'] = compiled.entry;
const leasehold = (await import(
  compiled.entry === undefined ? './../src/index.ts' : pathToFileURL(compiled.entry).href
)) as typeof import('../src/index.ts');

/** leasehold without the adapter: the lease's signal is never read. */
async function direct(url: string): Promise<ContenderClient> {
  const lh = await leasehold.Leasehold.connect({ url, driver: 'ioredis' });
  const never = new AbortController().signal;
  return {
    async acquire(name, { ttl }) {
      const lease = await lh.acquire(name, { ttl });
      return { signal: never, release: () => lease.release().then(() => {}) };
    },
    close: () => lh.close(),
  };
}

const connect = (id: string, url: string) => (id === DIRECT ? direct(url) : contender(id).connect(url));

async function pair(client: ContenderClient, name: string): Promise<void> {
  const lease = await client.acquire(name, { ttl: TTL });
  await lease.release();
}

/** 64 loops on distinct names until `ms` passes; pairs per second. */
async function parallel(client: ContenderClient, prefix: string, ms: number): Promise<number> {
  let n = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      while (performance.now() < deadline) {
        await pair(client, `${prefix}:lane${lane}`);
        n++;
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

async function sequential(client: ContenderClient, name: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await pair(client, name);
}

type Others = 'alone' | 'crowd' | 'peers' | 'idle';
type Warmup = 'sequential' | 'parallel';
/** Default: the breakdown's setup, the full run's, and the warm-up alone between them. */
const SETUPS = values.setups.split(',').map((pair) => {
  const [others, warmup] = pair.split(':');
  if (!['alone', 'crowd', 'peers', 'idle'].includes(others!) || !['sequential', 'parallel'].includes(warmup!))
    throw new TypeError(`--setups: unknown ${pair}`);
  return [others, warmup] as [Others, Warmup];
});

async function cell(
  bench: Bench,
  id: string,
  others: Others,
  warmup: Warmup,
  round: number,
): Promise<number> {
  const crowd = new Map<string, ContenderClient>();
  if (others !== 'alone') {
    // As in the full run: every contender connected for the whole scenario, each having had its turn.
    for (const c of contenders) {
      if (others === 'peers' && c.id === 'leasehold-node-redis') continue;
      // The direct variant stands in for the adapter it is compared with.
      const cid = c.id === 'leasehold-ioredis' && id === DIRECT ? DIRECT : c.id;
      const client = await connect(cid, bench.url);
      crowd.set(cid, client);
      if (cid === id || others === 'idle') continue;
      await sequential(client, `setup:${round}:${c.id}:${others}${warmup}`, 1_100);
      await parallel(client, `setup:${round}:${c.id}:${others}${warmup}`, windowMs);
    }
  }
  const client = crowd.get(id) ?? (await connect(id, bench.url));
  try {
    const name = `setup:${round}:${id}:${others}:${warmup}`;
    if (warmup === 'sequential') await sequential(client, name, 1_100);
    else await parallel(client, `${name}:warm`, 500);
    return await parallel(client, name, windowMs);
  } finally {
    await client.close();
    for (const [cid, other] of crowd) if (cid !== id) await other.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const bench = await Bench.start();
const samples = new Map<string, number[]>();
try {
  console.log(`uncontended setup: ${rounds} rounds, ${windowMs} ms windows, ${await bench.version()}`);
  for (const id of MEASURED) await cell(bench, id, 'alone', 'parallel', -1);
  for (let round = 0; round < rounds; round++) {
    for (const [others, warmup] of SETUPS) {
      {
        const ids = round % 2 === 0 ? MEASURED : [...MEASURED].reverse();
        for (const id of ids) {
          const rate = await cell(bench, id, others, warmup, round);
          const key = `${others} ${warmup} ${id}`;
          samples.set(key, [...(samples.get(key) ?? []), rate]);
          console.log(`  round ${round + 1} ${key}: ${rate.toFixed(0)}/s`);
        }
      }
    }
  }
} finally {
  await bench.stop();
}
const summary = [];
console.log(
  '\n| others | warm-up | leasehold (ioredis), adapter | direct | redis-semaphore | adapter / r-s | direct / r-s |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
for (const [others, warmup] of SETUPS) {
  const pick = (id: string) => median(samples.get(`${others} ${warmup} ${id}`)!);
  const pick0 = (id: string) => (MEASURED.includes(id) ? pick(id) : Number.NaN);
  const [adapter, plain, theirs] = [pick0('leasehold-ioredis'), pick0(DIRECT), pick0('redis-semaphore')];
  summary.push({ others, warmup, adapter, direct: plain, redisSemaphore: theirs });
  const pct = (x: number) => `${((x / theirs) * 100).toFixed(0)} %`;
  console.log(
    `| ${others} | ${warmup} | ${adapter.toFixed(0)} | ${plain.toFixed(0)} | ${theirs.toFixed(0)} | ${pct(adapter)} | ${pct(plain)} |`,
  );
}
await writeFile(
  values.out,
  `${JSON.stringify({ machine: machine(), rounds, windowMs, samples: Object.fromEntries(samples), summary }, null, 2)}\n`,
);
process.exit(0);
