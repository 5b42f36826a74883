// Does it scale with masters? (issue 27, item 4): `npm run bench:cluster` (about 12 minutes,
// `-- --quick` about 3). Acquire+release/s on a Redis Cluster of 1, 3 and 6 masters (no replicas,
// real redis-server processes on free ports, formed by test/harness/cluster.ts) and, as the
// baseline, on one plain redis-server; every contender that supports a Cluster through its own
// client, in the same run, interleaved per round:
//   1 process, 1 in flight     latency of one acquire+release (routing included)
//   1 process, 64 in flight    one client process's throughput
//   2 processes, 64 in flight  two client processes (this machine has two cores)
// Lock names differ per process and lane, so keys hash over every slot. Beside ops/s it records
// each master's Redis CPU and the client processes' CPU over the window: where the limit is.
// Writes bench/results/cluster.json (quick or partial: cluster.tmp.json) and, on a full run, the
// part of docs/benchmarks.md between <!-- cluster:start --> and <!-- cluster:end -->.
// Options: --quick, --masters=0,1,3,6 (0: the plain redis-server), --contenders=a,b, --no-docs, --report=<json> (docs only).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { RedisCluster } from '../test/harness/cluster.ts';
import { within } from '../test/harness/leasehold.ts';
import { RedisServer } from '../test/harness/redis-server.ts';
import { info } from '../test/harness/resp.ts';
import type { ClusterCellRequest, WindowResult } from './cluster/protocol.ts';
import { clusterSection, END, renderClusterChart, START } from './cluster/report.ts';
import {
  type ClusterResults,
  type ClusterRound,
  type Shape,
  shapeLabel,
  topologyLabel,
} from './cluster/results.ts';
import { contenders as every } from './contenders/index.ts';
import { machine } from './lib/machine.ts';
import { Worker } from './lib/workers.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    masters: { type: 'string' },
    contenders: { type: 'string' },
    'no-docs': { type: 'boolean' },
    report: { type: 'string' },
  },
});

const settings = {
  // 0: one plain redis-server, the same clients without Cluster routing (the baseline).
  masters: values.masters?.split(',').map(Number) ?? [0, 1, 3, 6],
  shapes: [
    { processes: 1, lanes: 1 },
    { processes: 1, lanes: 64 },
    { processes: 2, lanes: 64 },
  ] satisfies Shape[],
  rounds: values.quick ? 1 : 2,
  warmupMs: values.quick ? 300 : 700,
  windowMs: values.quick ? 1_000 : 2_500,
  ttl: 10_000,
};

/** A contender that never answers fails its cell instead of stalling the run. */
const CALL_LIMIT_MS = 60_000;
const WORKER = fileURLToPath(new URL('./cluster/worker.ts', import.meta.url));

/** Where the clients connect: a plain redis-server (masters 0) or a Cluster of `masters`. */
interface Topology {
  target: ClusterCellRequest['target'];
  /** The masters' ports, for their CPU. */
  ports: number[];
  stop(): Promise<void>;
}

async function topology(masters: number): Promise<Topology> {
  if (masters === 0) {
    const server = await RedisServer.start();
    return { target: { url: server.url }, ports: [server.port], stop: () => server.stop() };
  }
  // Announced addresses: a lone master has met no peer, so without one CLUSTER SLOTS names it
  // with an empty host, which ioredis's Cluster cannot connect to.
  const cluster = await RedisCluster.start({
    masters,
    replicasPerMaster: 0,
    args: ['--cluster-announce-ip', '127.0.0.1'],
  });
  return {
    target: { rootNodes: cluster.rootNodes.map((n) => n.url) },
    ports: cluster.masters.map((m) => m.port),
    stop: () => cluster.stop(),
  };
}

/** Redis CPU seconds (user + sys) of each master so far. */
async function redisCpu(ports: number[]): Promise<number[]> {
  return Promise.all(
    ports.map(async (port) => {
      const cpu = await info(port, 'cpu');
      return Number(cpu['used_cpu_user']) + Number(cpu['used_cpu_sys']);
    }),
  );
}

/** One measured window of one contender in one shape: every process at once. */
async function measure(
  where: Topology,
  clients: Worker[],
  contender: string,
  shape: Shape,
  tag: string,
): Promise<ClusterRound> {
  const base = {
    contender,
    target: where.target,
    lanes: shape.lanes,
    ttl: settings.ttl,
    tag,
  };
  const used = clients.slice(0, shape.processes);
  const call = (w: Worker, body: Parameters<Worker['call']>[0]) =>
    within(w.call<WindowResult | undefined>(body), CALL_LIMIT_MS, `worker ${w.index}, ${contender}`);
  await Promise.all(used.map((w) => call(w, { ...base, cmd: 'cluster-warm', warmupMs: settings.warmupMs })));
  const before = await redisCpu(where.ports);
  const started = performance.now();
  const windows = (await Promise.all(
    used.map((w) => call(w, { ...base, cmd: 'cluster-run', windowMs: settings.windowMs })),
  )) as WindowResult[];
  const seconds = (performance.now() - started) / 1000;
  const after = await redisCpu(where.ports);
  const ops = windows.reduce((sum, w) => sum + w.ops, 0);
  return {
    opsPerSecond: ops / Math.max(...windows.map((w) => w.seconds)),
    p50: windows[0]!.latency.p50,
    p99: Math.max(...windows.map((w) => w.latency.p99)),
    clientCpu: windows.reduce((sum, w) => sum + w.cpu, 0),
    redisCpu: after.map((cpu, i) => (cpu - before[i]!) / seconds),
  };
}

async function run(): Promise<ClusterResults> {
  const wanted = values.contenders?.split(',');
  const list = every.filter(
    (c) =>
      c.connectCluster !== undefined &&
      c.baseline === undefined &&
      c.scenarios === undefined &&
      (wanted === undefined || wanted.includes(c.id)),
  );
  const results: ClusterResults = {
    machine: machine(),
    settings: { ...settings, quick: values.quick === true },
    contenders: await Promise.all(list.map((c) => c.info())),
    cells: [],
    failures: [],
  };
  const most = Math.max(...settings.shapes.map((s) => s.processes));
  for (const masters of settings.masters) {
    console.log(`\n${topologyLabel(masters)}: starting`);
    const where = await topology(masters);
    const clients = await Promise.all(
      Array.from({ length: most }, (_, i) => Worker.spawn(i, { script: WORKER })),
    );
    try {
      for (let round = 0; round < settings.rounds; round++) {
        // Each round starts one contender further along, so none always runs first or last.
        const order = list.map((_, i) => list[(i + round) % list.length]!);
        for (const c of order) {
          for (const shape of settings.shapes) {
            const label = `${c.id}, ${topologyLabel(masters)}, ${shapeLabel(shape)}, round ${round + 1}`;
            try {
              const r = await measure(
                where,
                clients,
                c.id,
                shape,
                `cl${masters}r${round}${shape.processes}x${shape.lanes}`,
              );
              let cell = results.cells.find(
                (x) =>
                  x.contender === c.id &&
                  x.masters === masters &&
                  x.processes === shape.processes &&
                  x.lanes === shape.lanes,
              );
              if (cell === undefined) {
                cell = { contender: c.id, masters, ...shape, rounds: [] };
                results.cells.push(cell);
              }
              cell.rounds.push(r);
              console.log(
                `  ${label}: ${r.opsPerSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(3)} ms, client CPU ` +
                  `${(r.clientCpu * 100).toFixed(0)} %, Redis CPU ${r.redisCpu.map((x) => `${(x * 100).toFixed(0)} %`).join(' / ')}`,
              );
            } catch (error) {
              const text = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
              results.failures.push({ contender: c.id, masters, ...shape, error: text });
              console.log(`  ${label}: FAILED: ${text}`);
            }
          }
        }
      }
    } finally {
      await Promise.allSettled(clients.map((w) => w.stop(5_000)));
      await where.stop();
    }
  }
  return results;
}

async function writeDocs(results: ClusterResults): Promise<void> {
  const chart = await renderClusterChart(results, `${root}docs/benchmarks`);
  const path = `${root}docs/benchmarks.md`;
  const doc = await readFile(path, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start === -1 || end < start) throw new Error(`docs/benchmarks.md has no ${START} ... ${END}: add them`);
  const section = clusterSection(results, chart);
  await writeFile(path, `${doc.slice(0, start)}${section}${doc.slice(end + END.length)}`);
  console.log(`wrote the cluster table in docs/benchmarks.md and docs/benchmarks/${chart}`);
}

if (values.report !== undefined) {
  await writeDocs(JSON.parse(await readFile(values.report, 'utf8')) as ClusterResults);
} else {
  const results = await run();
  const partial = values.quick || values.masters !== undefined || values.contenders !== undefined;
  await mkdir(`${root}bench/results`, { recursive: true });
  const out = `${root}bench/results/${partial ? 'cluster.tmp.json' : 'cluster.json'}`;
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
  if (!partial && values['no-docs'] !== true) await writeDocs(results);
}
