// One client process of `npm run bench:cluster` (bench/cluster.ts), forked by bench/lib/workers.ts
// and speaking its protocol (bench/workers/protocol.ts). It keeps one connected client per
// contender for the topology it serves (connecting is not measured) and answers `cluster-warm`
// (connect if needed, then acquire+release for a while on the cell's names) and `cluster-run`
// (the measured window). The parent sends `cluster-run` to every process at once, after all of
// them answered `cluster-warm`, so that their windows coincide.
import { contender } from '../contenders/index.ts';
import type { ContenderClient } from '../contenders/types.ts';
import { summarize } from '../lib/stats.ts';
import type { Event, Notice, Reply, Request } from '../workers/protocol.ts';
import type { ClusterCellRequest, WindowResult } from './protocol.ts';

const me = Number(process.env['BENCH_WORKER'] ?? 0);
const clients = new Map<string, ContenderClient>();

async function clientFor(id: string, target: ClusterCellRequest['target']): Promise<ContenderClient> {
  let client = clients.get(id);
  if (client === undefined) {
    const c = contender(id);
    if ('url' in target) client = await c.connect(target.url);
    else if (c.connectCluster === undefined) throw new Error(`${id} has no Redis Cluster support`);
    else client = await c.connectCluster(target.rootNodes);
    clients.set(id, client);
  }
  return client;
}

/** `lanes` loops of acquire+release, each on a name of its own, until `until`; latencies in ms. */
async function loop(client: ContenderClient, req: ClusterCellRequest, until: number): Promise<number[]> {
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: req.lanes }, async (_, lane) => {
      // Names differ by process and lane, so the keys hash over every slot (and master).
      const name = `${req.tag}:p${me}:l${lane}`;
      while (performance.now() < until) {
        const started = performance.now();
        const lease = await client.acquire(name, { ttl: req.ttl });
        await lease.release();
        samples.push(performance.now() - started);
      }
    }),
  );
  return samples;
}

async function handle(req: Request): Promise<WindowResult | undefined> {
  if (req.cmd !== 'cluster-warm' && req.cmd !== 'cluster-run')
    throw new Error(`bench/cluster/worker.ts does not serve ${req.cmd}`);
  const client = await clientFor(req.contender, req.target);
  if (req.cmd === 'cluster-warm') {
    await loop(client, req, performance.now() + req.warmupMs);
    return undefined;
  }
  const cpu = process.cpuUsage();
  const started = performance.now();
  const samples = await loop(client, req, started + req.windowMs);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    ops: samples.length,
    seconds,
    latency: summarize(samples),
    cpu: (used.user + used.system) / 1e6 / seconds,
  };
}

const send = (message: Reply | Event) => process.send?.(message);

process.on('message', (message: Request | Notice) => {
  if ('notice' in message) {
    if (message.notice === 'exit')
      void Promise.allSettled([...clients.values()].map((c) => c.close())).then(() => process.exit(0));
    return;
  }
  handle(message).then(
    (value) => send({ id: message.id, ok: true, value }),
    (error: unknown) =>
      send({ id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
send({ event: 'ready', worker: me });
