import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './poll.ts';
import { freePort } from './ports.ts';
import { RedisServer } from './redis-server.ts';
import { command, info, parseFields } from './resp.ts';

const SLOTS = 16_384;

export interface RedisClusterOptions {
  /** @default 3 */
  masters?: number;
  /** @default 1 */
  replicasPerMaster?: number;
  /** Extra redis-server flags for every node. */
  args?: string[];
  /** Extra environment for every node (e.g. a clock shim's, test/harness/fake-clock.ts). */
  env?: NodeJS.ProcessEnv;
  /** How long forming the cluster may take. @default 20000 */
  timeout?: number;
}

export type ClusterRole = 'master' | 'replica';

/** One node as the cluster itself last reported it (see `RedisCluster.refresh`). */
export interface ClusterNode {
  readonly server: RedisServer;
  readonly port: number;
  readonly url: string;
  readonly id: string;
  readonly role: ClusterRole;
  /** For a replica, the id of its master. */
  readonly masterId: string | undefined;
  /** Slot ranges `[first, last]` the node serves (masters only). */
  readonly slots: readonly (readonly [number, number])[];
  /** False once the harness killed the process. */
  readonly alive: boolean;
}

interface NodeState {
  server: RedisServer;
  port: number;
  url: string;
  id: string;
  role: ClusterRole;
  masterId: string | undefined;
  slots: [number, number][];
  alive: boolean;
  bus: number;
}

/** One line of CLUSTER NODES. */
interface NodeView {
  id: string;
  flags: Set<string>;
  masterId: string | undefined;
  slots: [number, number][];
}

/**
 * A Redis Cluster of real processes on free ports, formed with CLUSTER ADDSLOTSRANGE / MEET /
 * REPLICATE (faster than `redis-cli --cluster create`, which sleeps a second per check). Start
 * takes about 2 s: a master reports cluster_state:ok no sooner than 2 s after its process started.
 * Node timeout is 1 s and replica validity is not checked, so a killed master's replica takes over
 * in 2-3 s; that needs a majority of masters alive, so 3 masters at least. Files live in a temp
 * dir that `stop()` removes.
 *
 * @example
 * const cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 1 });
 * const client = createCluster({ rootNodes: cluster.rootNodes });
 * await cluster.failover(cluster.masterFor('lock:{name}'));
 */
export class RedisCluster {
  readonly #dir: string;
  readonly #nodes: NodeState[];
  #stopped = false;

  private constructor(dir: string, nodes: NodeState[]) {
    this.#dir = dir;
    this.#nodes = nodes;
  }

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicasPerMaster ?? 1;
    const timeout = options.timeout ?? 20_000;
    const dir = await mkdtemp(join(tmpdir(), 'leasehold-cluster-'));
    const started = await Promise.allSettled(
      Array.from({ length: masters * (1 + replicas) }, () => startNode(dir, options.args ?? [], options.env)),
    );
    const nodes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const cluster = new RedisCluster(dir, nodes);
    try {
      const failure = started.find((result) => result.status === 'rejected');
      if (failure !== undefined) throw failure.reason;
      await cluster.#form(masters, timeout);
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  async #form(masters: number, timeout: number): Promise<void> {
    const nodes = this.#nodes;
    await Promise.all(
      nodes.map(async (node, i) => {
        node.id = String(await command(node.port, ['CLUSTER', 'MYID']));
        // Distinct epochs up front, as redis-cli does, so no epoch collision has to be resolved.
        await command(node.port, ['CLUSTER', 'SET-CONFIG-EPOCH', i + 1]);
        if (i < masters) {
          node.role = 'master';
          node.slots = [[Math.floor((i * SLOTS) / masters), Math.floor(((i + 1) * SLOTS) / masters) - 1]];
          for (const [first, last] of node.slots) {
            await command(node.port, ['CLUSTER', 'ADDSLOTSRANGE', first, last]);
          }
        } else {
          node.role = 'replica';
        }
      }),
    );
    // Only now: inside the parallel map above, a master's id may not have been read yet (that
    // race sent "CLUSTER REPLICATE ''" and failed a CI run with "ERR Unknown node").
    nodes.forEach((node, i) => {
      if (node.role === 'replica') node.masterId = nodes[(i - masters) % masters]?.id;
    });
    const [first, ...others] = nodes;
    if (first === undefined) throw new Error('a cluster needs at least one node');
    for (const node of others) {
      await command(first.port, ['CLUSTER', 'MEET', '127.0.0.1', node.port, node.bus]);
    }
    // CLUSTER REPLICATE needs the replica to know its master, so wait for the handshakes first.
    await until('every node to know every other node', () => this.#agree(false), { timeout });
    for (const node of nodes) {
      if (node.role === 'replica') await command(node.port, ['CLUSTER', 'REPLICATE', node.masterId ?? '']);
    }
    await until('the cluster to be ok with every replica in sync', () => this.#agree(true), { timeout });
    await this.refresh();
  }

  /** True when every live node sees the expected roles (and, if `settled`, the cluster is ok). */
  async #agree(settled: boolean): Promise<boolean> {
    const live = this.#nodes.filter((node) => node.alive);
    for (const node of live) {
      const views = await clusterNodes(node.port);
      for (const other of live) {
        const view = views.find((candidate) => candidate.id === other.id);
        if (view === undefined || view.flags.has('handshake') || view.flags.has('noaddr')) return false;
        if (view.flags.has('fail') || view.flags.has('fail?')) return false;
        if (!settled) continue;
        if (other.role === 'replica' && view.masterId !== other.masterId) return false;
        if (other.role === 'master' && !view.flags.has('master')) return false;
      }
      if (!settled) continue;
      const state = parseFields(String(await command(node.port, ['CLUSTER', 'INFO'])));
      if (state['cluster_state'] !== 'ok') return false;
      if (node.role === 'replica') {
        const replication = await info(node.port, 'replication');
        if (replication['master_link_status'] !== 'up' || replication['master_sync_in_progress'] !== '0') {
          return false;
        }
      }
    }
    return true;
  }

  /** Every node, dead ones included, in start order (masters first); `refresh()` updates them. */
  get nodes(): readonly ClusterNode[] {
    return this.#nodes;
  }

  get masters(): readonly ClusterNode[] {
    return this.#nodes.filter((node) => node.alive && node.role === 'master');
  }

  get replicas(): readonly ClusterNode[] {
    return this.#nodes.filter((node) => node.alive && node.role === 'replica');
  }

  /** Live nodes in the shape `createCluster({ rootNodes })` takes. */
  get rootNodes(): { url: string }[] {
    return this.#nodes.filter((node) => node.alive).map((node) => ({ url: node.url }));
  }

  /** The live master serving `key`'s slot, as of the last refresh. */
  masterFor(key: string): ClusterNode {
    const slot = keySlot(key);
    const node = this.masters.find((master) => master.slots.some(([a, b]) => slot >= a && slot <= b));
    if (node === undefined) throw new Error(`no live master serves slot ${slot} (key ${key})`);
    return node;
  }

  replicasOf(master: ClusterNode): ClusterNode[] {
    return this.#nodes.filter((node) => node.alive && node.role === 'replica' && node.masterId === master.id);
  }

  /** Re-reads roles and slots from a live node's CLUSTER NODES. */
  async refresh(): Promise<void> {
    const source = this.#nodes.find((node) => node.alive);
    if (source === undefined) return;
    const views = await clusterNodes(source.port);
    for (const node of this.#nodes) {
      const view = views.find((candidate) => candidate.id === node.id);
      if (view === undefined) continue;
      node.role = view.flags.has('master') ? 'master' : 'replica';
      node.masterId = view.masterId;
      node.slots = node.alive ? view.slots : [];
    }
  }

  /**
   * SIGKILLs `master` and waits until one of its replicas has been promoted in the view of every
   * live node and every live node reports cluster_state:ok. Returns the promoted node.
   */
  async failover(master: ClusterNode, timeout = 15_000): Promise<ClusterNode> {
    const state = this.#nodes.find((node) => node.id === master.id);
    if (state === undefined || !state.alive || state.role !== 'master') {
      throw new Error(`port ${master.port} is not a live master`);
    }
    const candidates = this.#nodes.filter(
      (node) => node.alive && node.role === 'replica' && node.masterId === state.id,
    );
    if (candidates.length === 0) throw new Error(`master on port ${master.port} has no replica to promote`);
    await state.server.kill('SIGKILL');
    state.alive = false;
    const promoted = await until(
      `a replica of port ${master.port} to be promoted`,
      async () => {
        let winner: NodeState | undefined;
        for (const node of this.#nodes.filter((candidate) => candidate.alive)) {
          const views = await clusterNodes(node.port);
          const fresh = candidates.find((candidate) => {
            const view = views.find((v) => v.id === candidate.id);
            return view?.flags.has('master') === true && view.slots.length > 0;
          });
          if (fresh === undefined || (winner !== undefined && fresh !== winner)) return undefined;
          winner = fresh;
          const clusterInfo = parseFields(String(await command(node.port, ['CLUSTER', 'INFO'])));
          if (clusterInfo['cluster_state'] !== 'ok') return undefined;
        }
        return winner;
      },
      { timeout, interval: 100 },
    );
    await this.refresh();
    return promoted;
  }

  /** Kills every node by its own pid and removes the temp dir; safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.#nodes.map((node) => node.server.stop()));
    for (const node of this.#nodes) node.alive = false;
    await rm(this.#dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** The hash slot of a key (CRC16/XMODEM of the `{hash tag}` if there is one, mod 16384). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf('{');
  if (open !== -1) {
    const close = bytes.indexOf('}', open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % SLOTS;
  }
  return crc16(bytes) % SLOTS;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = (crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * Starts one cluster-enabled node. The bus port is chosen explicitly (`cluster-port`, 7.0+)
 * because the default, port + 10000, overflows for ephemeral ports above 55535.
 */
async function startNode(
  dir: string,
  extra: string[],
  env: NodeJS.ProcessEnv | undefined,
  attempts = 3,
): Promise<NodeState> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const bus = await freePort();
    if (bus === port) continue;
    try {
      const server = await RedisServer.start({
        port,
        ...(env === undefined ? {} : { env }),
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          '1000',
          '--cluster-port',
          String(bus),
          '--cluster-replica-validity-factor',
          '0',
          '--repl-diskless-sync-delay',
          '0',
          '--dir',
          dir,
          ...extra,
        ],
      });
      const { url } = server;
      return { server, port, url, bus, id: '', role: 'master', masterId: undefined, slots: [], alive: true };
    } catch (error) {
      if (!/Address already in use/i.test(String(error)) || attempt >= attempts) throw error;
    }
  }
}

async function clusterNodes(port: number): Promise<NodeView[]> {
  const text = String(await command(port, ['CLUSTER', 'NODES']));
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', , flags = '', master = '-', , , , , ...slots] = line.split(' ');
      return {
        id,
        flags: new Set(flags.split(',')),
        masterId: master === '-' ? undefined : master,
        slots: slots
          .filter((slot) => !slot.startsWith('['))
          .map((slot): [number, number] => {
            const [a = '', b = a] = slot.split('-');
            return [Number(a), Number(b)];
          }),
      };
    });
}
