import type { Summary } from '../lib/stats.ts';

/**
 * One cell's work for one client process (bench/cluster/worker.ts), the body of the `cluster-warm`
 * and `cluster-run` requests of bench/workers/protocol.ts.
 */
export interface ClusterCellRequest {
  contender: string;
  /** A plain redis-server (the standalone baseline) or a Cluster's nodes. */
  target: { url: string } | { rootNodes: readonly string[] };
  /** Acquisitions in flight in this process, each on a lock name of its own. */
  lanes: number;
  ttl: number;
  /** Lock-name prefix of the cell (distinct per cell, so no cell meets another's keys). */
  tag: string;
}

/** What a process measured in one window. */
export interface WindowResult {
  ops: number;
  seconds: number;
  /** acquire+release, ms */
  latency: Summary;
  /** The process's CPU over the window, in cores (1 = one core busy all the time). */
  cpu: number;
}
