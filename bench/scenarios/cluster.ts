// Does it scale with masters? (issue 27, item 4). Acquire + release/s on a Redis Cluster of 1, 3
// and 6 masters (no replicas, real redis-server processes formed by test/harness/cluster.ts) and,
// as the baseline, on one plain redis-server (masters 0); every contender with Cluster support
// through its own client, interleaved per round, in three shapes: 1 process with 1 in flight (the
// latency), 1 process with 64 in flight, 2 processes with 64 in flight each (this machine has two
// cores). Lock names differ per process and lane, so keys hash over every slot. Beside pairs/s it
// records each master's Redis CPU and the client processes' CPU: where the limit is.
import { RedisCluster } from '../../test/harness/cluster.ts';
import { within } from '../../test/harness/leasehold.ts';
import { RedisServer } from '../../test/harness/redis-server.ts';
import { info } from '../../test/harness/resp.ts';
import { Worker } from '../lib/workers.ts';
import type { PairsResult, Target } from '../workers/protocol.ts';
import { type Context, fail, lockName, order } from './context.ts';

/** How the load is offered: client processes, each with `lanes` acquisitions in flight. */
export interface Shape {
  processes: number;
  lanes: number;
}

export const shapeLabel = ({ processes, lanes }: Shape): string =>
  `${processes} process${processes === 1 ? '' : 'es'}, ${lanes} in flight${processes === 1 ? '' : ' each'}`;

/** 0 masters: the plain redis-server baseline. */
export const topologyLabel = (masters: number): string =>
  masters === 0 ? 'one plain redis-server' : `Cluster of ${masters} master${masters === 1 ? '' : 's'}`;

/** One measured window. */
export interface ClusterRound {
  opsPerSecond: number;
  /** acquire+release latency of the first process, ms */
  p50: number;
  /** the worst process's p99, ms */
  p99: number;
  /** the client processes' CPU together, in cores */
  clientCpu: number;
  /** each master's Redis CPU over the window, in cores */
  redisCpu: number[];
}

export interface ClusterCell extends Shape {
  contender: string;
  masters: number;
  rounds: ClusterRound[];
}

/** The cell of one contender on one topology in one shape. */
export function cellOf(cells: readonly ClusterCell[], contender: string, masters: number, shape: Shape) {
  const same = (c: ClusterCell) => c.processes === shape.processes && c.lanes === shape.lanes;
  return cells.find((c) => c.contender === contender && c.masters === masters && same(c));
}

export interface ClusterResult {
  settings: {
    masters: number[];
    shapes: Shape[];
    rounds: number;
    warmupMs: number;
    windowMs: number;
    ttl: number;
  };
  cells: ClusterCell[];
}

/** Where the clients connect, the masters' ports (for their CPU), and how to stop it. */
async function topology(
  masters: number,
): Promise<{ target: Target; ports: number[]; stop(): Promise<void> }> {
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
const redisCpu = (ports: number[]) =>
  Promise.all(
    ports.map(async (port) => {
      const cpu = await info(port, 'cpu');
      return Number(cpu['used_cpu_user']) + Number(cpu['used_cpu_sys']);
    }),
  );

/** A contender that never answers fails its cell instead of stalling the run. */
const CALL_LIMIT_MS = 60_000;

export async function cluster(ctx: Context): Promise<ClusterResult> {
  const settings = ctx.config.cluster;
  const list = ctx.contenders.filter((c) => c.connectCluster !== undefined && c.baseline === undefined);
  const result: ClusterResult = { settings, cells: [] };
  const most = Math.max(...settings.shapes.map((s) => s.processes));
  for (const masters of settings.masters) {
    ctx.log(`  ${topologyLabel(masters)}: starting`);
    const where = await topology(masters);
    const clients = await Promise.all(Array.from({ length: most }, (_, i) => Worker.spawn(700 + i)));
    try {
      for (let round = 0; round < settings.rounds; round++) {
        for (const c of order(list, round)) {
          for (const shape of settings.shapes) {
            const label = `${c.id}, ${topologyLabel(masters)}, ${shapeLabel(shape)}, round ${round + 1}`;
            try {
              const used = clients.slice(0, shape.processes);
              await Promise.all(used.map((w) => w.call({ cmd: 'init', contender: c.id, ...where.target })));
              // Every process warms up, then all measure at once, so that their windows coincide.
              const window = (ms: number) =>
                Promise.all(
                  used.map((w) =>
                    within(
                      w.call<PairsResult>({
                        cmd: 'pairs',
                        contender: c.id,
                        lanes: shape.lanes,
                        ttl: settings.ttl,
                        tag: lockName('cluster', masters, round, shape.processes, shape.lanes),
                        ms,
                      }),
                      CALL_LIMIT_MS,
                      `worker ${w.index}, ${c.id}`,
                    ),
                  ),
                );
              await window(settings.warmupMs);
              const before = await redisCpu(where.ports);
              const started = performance.now();
              const windows = await window(settings.windowMs);
              const seconds = (performance.now() - started) / 1000;
              const after = await redisCpu(where.ports);
              const r: ClusterRound = {
                opsPerSecond:
                  windows.reduce((sum, w) => sum + w.pairs, 0) / Math.max(...windows.map((w) => w.seconds)),
                p50: windows[0]!.latency.p50,
                p99: Math.max(...windows.map((w) => w.latency.p99)),
                clientCpu: windows.reduce((sum, w) => sum + w.cpu / 1000 / w.seconds, 0),
                redisCpu: after.map((cpu, i) => (cpu - before[i]!) / seconds),
              };
              let cell = cellOf(result.cells, c.id, masters, shape);
              if (cell === undefined) {
                cell = { contender: c.id, masters, ...shape, rounds: [] };
                result.cells.push(cell);
              }
              cell.rounds.push(r);
              ctx.log(
                `  ${label}: ${r.opsPerSecond.toFixed(0)}/s, p50 ${r.p50.toFixed(3)} ms, client CPU ` +
                  `${(r.clientCpu * 100).toFixed(0)} %, Redis CPU ${r.redisCpu.map((x) => `${(x * 100).toFixed(0)} %`).join(' / ')}`,
              );
            } catch (error) {
              // One line per cell in the run's failures (its first round's error).
              fail(ctx, 'cluster', `${c.id}, ${topologyLabel(masters)}, ${shapeLabel(shape)}`, error);
            }
          }
        }
      }
    } finally {
      await Promise.allSettled(clients.map((w) => w.stop(5_000)));
      await where.stop();
    }
  }
  return result;
}
