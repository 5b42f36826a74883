import type { ContenderInfo } from './contenders/types.ts';
import type { Machine } from './lib/machine.ts';
import type { BudgetResult } from './scenarios/budget.ts';
import type { ClusterResult } from './scenarios/cluster.ts';
import type { CrashResult } from './scenarios/crash.ts';
import type { FailoverResult } from './scenarios/failover.ts';
import type { HandoffResult } from './scenarios/handoff.ts';
import type { IdleResult } from './scenarios/idle.ts';
import type { LossResult } from './scenarios/loss.ts';
import type { PostgresResult } from './scenarios/postgres.ts';
import type { ScaleResult } from './scenarios/scale.ts';
import type { ServersResult } from './scenarios/servers.ts';
import type { UncontendedResult } from './scenarios/uncontended.ts';

export interface Scenarios {
  uncontended?: UncontendedResult;
  handoff?: HandoffResult;
  /** The idle-waiter pattern: the handoff loop with 150-250 ms holds. */
  idleHandoff?: HandoffResult;
  loss?: LossResult;
  crash?: CrashResult;
  failover?: FailoverResult;
  idle?: IdleResult;
  scale?: ScaleResult;
  cluster?: ClusterResult;
  servers?: ServersResult;
  postgres?: PostgresResult;
  budget?: BudgetResult;
}

export type ScenarioId = keyof Scenarios;

/** Everything one run measured: bench/results/latest.json. */
export interface Results {
  /** 2 since issue 42 (one suite: scale holds the curves; cluster, servers, postgres, budget). */
  schema: 1 | 2;
  mode: 'full' | 'quick';
  command: string;
  machine: Machine;
  /** Load average when the run ended (the machine info carries the one at the start). */
  loadAverageAtEnd: number[];
  durationSeconds: number;
  /** The other commit built and measured next to this tree (bench --baseline=<commit>). */
  baseline?: { ref: string; commit: string; subject: string; note: string };
  contenders: ContenderInfo[];
  scenarios: Scenarios;
  /** Wall time and load average per scenario. */
  timings: Partial<Record<ScenarioId, { seconds: number; loadAverage: number[] }>>;
  /** A scenario that threw: its error, so the report can say so instead of showing nothing. */
  errors: Partial<Record<ScenarioId, string>>;
  /** scenario -> contender -> error: one contender failed, the scenario went on without it. */
  failures: Record<string, Record<string, string>>;
}
