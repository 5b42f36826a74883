// Where an uncontended acquire + release spends its time, leasehold beside the peers and beside the
// bare protocols they are built on, in one run on one redis-server:
//
//   node --import tsx bench/breakdown.ts [--seconds 3] [--rounds 3] [--lanes 64]
//
// Per variant: pairs per second with `lanes` acquire+release loops in flight on one connection;
// Redis CPU per pair (INFO used_cpu_*), this process's CPU per pair (process.cpuUsage), commands
// per pair (INFO), and "busy": (Redis + client CPU per pair) x pairs per second, in cores: 1.0
// means client and server took turns, more means they overlapped. The bare variants run the
// protocols without any library on the same clients, so that leasehold's cost splits into what
// its protocol costs Redis, what tracking costs, and what the library itself adds:
//   raw SET NX + release.lua          redis-semaphore's protocol (no fencing token)
//   raw acquire.lua + release.lua     leasehold's protocol (fencing token, tracking armed)
//   raw MULTI(SET NX, INCR, PTTL)     a fenced acquire without a script (tried, not used: see
//     + release.lua                   docs/benchmarks.md, "Where the time goes")
// Results go to bench/results/breakdown.json and stdout; docs/benchmarks.md quotes them.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { scriptSource } from '../src/scripts/index.ts';
import { contenders } from './contenders/index.ts';
import { compileLeasehold } from './lib/build.ts';
import { machine } from './lib/machine.ts';
import { Bench, type Counters } from './lib/redis.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    lanes: { type: 'string', default: '64' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const lanes = Number(values.lanes);
for (const [name, value] of Object.entries({ seconds, rounds, lanes }))
  if (!(value > 0)) throw new TypeError(`--${name} must be a positive number`);

/** One acquire + release on lock `name`; closes with close(). */
interface Pair {
  run(name: string, token: string): Promise<void>;
  close(): Promise<void>;
}
interface Variant {
  id: string;
  open(url: string): Promise<Pair>;
}

const ACQUIRE = scriptSource('acquire');
const RELEASE = scriptSource('release');
const TTL = '10000';

/** The same three commands through each client's own API: sendCommand / call. */
type Send = (args: string[]) => Promise<unknown>;
type Multi = (commands: string[][]) => Promise<unknown>;

async function nodeRedis(url: string): Promise<{ send: Send; multi: Multi; close: () => Promise<void> }> {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return {
    send: (args) => client.sendCommand(args),
    multi: (commands) => {
      const m = client.multi();
      for (const c of commands) m.addCommand(c);
      return m.exec();
    },
    close: () => client.close(),
  };
}

async function ioredis(url: string): Promise<{ send: Send; multi: Multi; close: () => Promise<void> }> {
  const client = new Redis(url, { enableAutoPipelining: false, lazyConnect: true });
  await client.connect();
  return {
    send: ([name, ...args]) => client.call(name!, ...args),
    multi: (commands) =>
      client.multi(commands.map(([name, ...args]) => [name!.toLowerCase(), ...args])).exec(),
    close: async () => {
      client.disconnect();
    },
  };
}

function raw(client: 'node-redis' | 'ioredis', protocol: 'set-nx' | 'script' | 'multi'): Variant {
  return {
    id: `raw ${protocol} (${client})`,
    async open(url) {
      const c = await (client === 'node-redis' ? nodeRedis(url) : ioredis(url));
      const acquireSha = String(await c.send(['SCRIPT', 'LOAD', ACQUIRE]));
      const releaseSha = String(await c.send(['SCRIPT', 'LOAD', RELEASE]));
      const acquire: Record<typeof protocol, (k: string, t: string) => Promise<unknown>> = {
        'set-nx': (k, t) => c.send(['SET', k, t, 'NX', 'PX', TTL]),
        script: (k, t) => c.send(['EVALSHA', acquireSha, '2', k, `${k}:fence`, t, TTL]),
        multi: (k, t) =>
          c.multi([
            ['SET', k, t, 'NX', 'PX', TTL],
            ['INCR', `${k}:fence`],
            ['PTTL', k],
          ]),
      };
      return {
        async run(name, token) {
          const key = `raw:{${name}}`;
          await acquire[protocol](key, token);
          await c.send(['EVALSHA', releaseSha, '1', key, token]);
        },
        close: c.close,
      };
    },
  };
}

async function leaseholdVariant(
  driver: 'node-redis' | 'ioredis',
  notifications: 'tracking' | 'polling',
): Promise<Variant> {
  const compiled = await compileLeasehold();
  const mod = (await import(compiled.entry ?? '../src/index.ts')) as typeof import('../src/index.ts');
  return {
    id: `leasehold ${notifications} (${driver})`,
    async open(url) {
      const lh = await mod.Leasehold.connect({ url, driver, notifications });
      return {
        async run(name) {
          const lease = await lh.acquire(name, { ttl: Number(TTL) });
          await lease.release();
        },
        close: () => lh.close(),
      };
    },
  };
}

/** The bench's own peer adapters, as the main benchmark uses them. */
function peer(id: string): Variant {
  const c = contenders.find((x) => x.id === id)!;
  return {
    id,
    async open(url) {
      const client = await c.connect(url);
      return {
        async run(name) {
          const held = await client.acquire(name, { ttl: Number(TTL) });
          await held.release();
        },
        close: () => client.close(),
      };
    },
  };
}

interface Sample {
  pairsPerSecond: number;
  serverUs: number;
  clientUs: number;
  commands: number;
  busy: number;
}

async function measure(bench: Bench, variant: Variant, round: number): Promise<Sample> {
  const pair = await variant.open(bench.url);
  try {
    const loop = async (lane: number, until: number, count: { n: number }) => {
      const name = `bd:${round}:${variant.id}:${lane}`;
      for (let i = 0; performance.now() < until; i++) {
        await pair.run(name, `t${lane}-${i}`);
        count.n++;
      }
    };
    const warm = { n: 0 };
    const warmUntil = performance.now() + 500;
    await Promise.all(Array.from({ length: lanes }, (_, lane) => loop(lane, warmUntil, warm)));
    const count = { n: 0 };
    const a: Counters = await bench.counters();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const until = started + seconds * 1000;
    await Promise.all(Array.from({ length: lanes }, (_, lane) => loop(lane, until, count)));
    const elapsed = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const b = await bench.counters();
    const serverUs = ((b.cpu - a.cpu) * 1000) / count.n;
    const clientUs = (used.user + used.system) / count.n;
    const pairsPerSecond = count.n / elapsed;
    return {
      pairsPerSecond,
      serverUs,
      clientUs,
      commands: (b.commands - a.commands - 1) / count.n,
      busy: ((serverUs + clientUs) * pairsPerSecond) / 1e6,
    };
  } finally {
    await pair.close();
  }
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

const variants: Variant[] = [
  peer('redis-semaphore'),
  peer('redlock-universal'),
  raw('node-redis', 'set-nx'),
  raw('ioredis', 'set-nx'),
  raw('node-redis', 'script'),
  raw('ioredis', 'script'),
  raw('node-redis', 'multi'),
  raw('ioredis', 'multi'),
  await leaseholdVariant('node-redis', 'tracking'),
  await leaseholdVariant('ioredis', 'tracking'),
  await leaseholdVariant('node-redis', 'polling'),
  await leaseholdVariant('ioredis', 'polling'),
];

const bench = await Bench.start();
const samples = new Map<string, Sample[]>(variants.map((v) => [v.id, []]));
try {
  console.log(`breakdown: ${lanes} in flight, ${seconds} s x ${rounds} rounds, ${await bench.version()}`);
  for (let round = 0; round < rounds; round++) {
    // Alternate the order so that no variant always runs right after the same neighbour.
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const variant of order) {
      const s = await measure(bench, variant, round);
      samples.get(variant.id)!.push(s);
      console.log(
        `  ${variant.id.padEnd(38)} ${s.pairsPerSecond.toFixed(0).padStart(6)}/s  Redis ${s.serverUs.toFixed(2)} us` +
          `  client ${s.clientUs.toFixed(2)} us  ${s.commands.toFixed(2)} cmds  busy ${s.busy.toFixed(2)}`,
      );
    }
  }
} finally {
  await bench.stop();
}
const summary = variants.map((v) => {
  const s = samples.get(v.id)!;
  const pick = (f: (x: Sample) => number) => median(s.map(f));
  return {
    variant: v.id,
    pairsPerSecond: pick((x) => x.pairsPerSecond),
    serverUs: pick((x) => x.serverUs),
    clientUs: pick((x) => x.clientUs),
    commands: pick((x) => x.commands),
    busy: pick((x) => x.busy),
  };
});
console.log(
  '\n| variant | pairs/s | Redis CPU per pair | client CPU per pair | commands per pair | busy (cores) |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of summary)
  console.log(
    `| ${r.variant} | ${r.pairsPerSecond.toFixed(0)} | ${r.serverUs.toFixed(2)} us | ${r.clientUs.toFixed(2)} us | ${r.commands.toFixed(1)} | ${r.busy.toFixed(2)} |`,
  );
await writeFile(
  new URL('./results/breakdown.json', import.meta.url),
  `${JSON.stringify({ date: new Date().toISOString(), machine: await machine(), lanes, seconds, rounds, summary }, null, 2)}\n`,
);
process.exit(0);
