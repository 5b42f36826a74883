// The deployment modes a scenario runs in (one server, a quorum of three, a cluster): how each lays
// out its lock servers and how a worker connects to them.
import { checkConnectOptions } from '../../src/options/index.ts';
import { RedisCluster } from '../harness/cluster.ts';
import { FakeClock } from '../harness/fake-clock.ts';
import { startMasters } from '../harness/masters.ts';
import { PgServer, pgServerMissing } from '../harness/pg-server.ts';
import type { LockServer, ModeName, Scenario } from './types.ts';

/** The lock servers of one run, as a mode lays them out. */
export interface LockServers {
  /** The processes faults are applied to (a cluster's masters). */
  servers: readonly LockServer[];
  urls: readonly string[];
  /** Whether each worker reaches each server through its own FaultProxy. */
  proxied: boolean;
  /** Cluster only: SIGKILLs the master serving `key` and waits for its replica to take over. */
  failover?: (key: string) => Promise<void>;
  stop(): Promise<void>;
}

/** How one deployment mode is laid out: its lock servers, and how a worker connects to them. */
export interface Mode {
  name: ModeName;
  /** Whether workers can be given a proxy of their own to each lock server. */
  proxied: boolean;
  /** Starts the lock servers; `env` goes to every redis-server process (a clock shim's). */
  start(env?: NodeJS.ProcessEnv): Promise<LockServers>;
  connect(urls: readonly string[]): Record<string, unknown>;
}

async function masters(n: number, env?: NodeJS.ProcessEnv): Promise<LockServers> {
  const started = await startMasters(n, env === undefined ? {} : { env });
  return { servers: started.servers, urls: started.urls, proxied: true, stop: started.stopAll };
}

export const MODES: Record<ModeName, Mode> = {
  single: {
    name: 'single',
    proxied: true,
    start: (env) => masters(1, env),
    connect: (urls) => ({ url: urls[0] }),
  },
  quorum: {
    name: 'quorum',
    proxied: true,
    start: (env) => masters(3, env),
    connect: (urls) => ({ nodes: [...urls] }),
  },
  // Cluster nodes announce their own ports (MOVED, CLUSTER SLOTS), so workers connect directly:
  // no per-worker proxy, and the scenarios that need one do not apply.
  cluster: {
    name: 'cluster',
    proxied: false,
    start: async (env) => {
      const cluster = await RedisCluster.start({
        masters: 3,
        replicasPerMaster: 1,
        ...(env === undefined ? {} : { env }),
      });
      return {
        servers: cluster.masters.map((node) => node.server),
        urls: cluster.rootNodes.map((node) => node.url),
        proxied: false,
        failover: async (key) => {
          await cluster.failover(cluster.masterFor(key));
        },
        stop: () => cluster.stop(),
      };
    },
    connect: (urls) => ({ cluster: { rootNodes: [...urls] } }),
  },
  // One PostgreSQL server of the run's own (test/harness/pg-server.ts): the proxy faults, a stalled
  // server (SIGSTOP of its process group) and a crash and restart, which PostgreSQL recovers from
  // its WAL (the last commits may be lost: leasehold commits without waiting for the flush).
  postgres: {
    name: 'postgres',
    proxied: true,
    start: async () => {
      const server = await PgServer.start();
      return { servers: [server], urls: [server.url()], proxied: true, stop: () => server.stop() };
    },
    // A proxy's URL names its port only (redis://127.0.0.1:<port>).
    connect: (urls) => ({
      postgres: urls[0]!.startsWith('postgres')
        ? urls[0]
        : `postgres://postgres@127.0.0.1:${new URL(urls[0]!).port}/leasehold`,
    }),
  },
};

/** Why a scenario cannot run in a mode yet (Leasehold.connect() refuses its options), or undefined. */
export function pendingReason(mode: Mode, scenario?: Scenario): string | undefined {
  if (mode.name === 'postgres') {
    if (scenario?.serverClock) return "n/a: the clock shim steps redis-server's clock only";
    return pgServerMissing();
  }
  if (scenario?.serverClock) {
    const missing = FakeClock.missing();
    if (missing !== undefined) return missing;
  }
  try {
    checkConnectOptions({
      ...mode.connect(['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3']),
      ...scenario?.connectExtra?.(mode.name),
    });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
