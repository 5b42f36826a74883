import type { ContenderInfo } from '../contenders/types.ts';
import type { Machine } from '../lib/machine.ts';

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

export interface ClusterResults {
  machine: Machine;
  settings: {
    masters: number[];
    shapes: Shape[];
    rounds: number;
    warmupMs: number;
    windowMs: number;
    ttl: number;
    quick: boolean;
  };
  contenders: ContenderInfo[];
  cells: ClusterCell[];
  failures: (Shape & { contender: string; masters: number; error: string })[];
}
