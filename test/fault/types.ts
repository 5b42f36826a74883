// What a fault scenario is, what it may do while the workers run (FaultContext) and what one run
// of it reports: the contract that scenarios.ts, the engine, the verdicts and the report share.
// ModeName lives here, not in modes.ts, so that modes.ts and this file do not import each other.
import type { FaultProxy } from '../harness/proxy.ts';
import type { Worker } from '../harness/worker.ts';
import type { CheckResult } from './checker.ts';
import type { FencedResource } from './resource.ts';

export type ModeName = 'single' | 'quorum' | 'cluster' | 'postgres';

/** A lock server process a fault acts on: a redis-server, or a PostgreSQL server of the run's own. */
export interface LockServer {
  readonly port: number;
  readonly pid: number | undefined;
  /** SIGSTOP / SIGCONT stall and resume it (all of its processes). */
  signal(signal: NodeJS.Signals): void;
  /** Kills it and starts it again on the same port: Redis comes back empty, PostgreSQL recovers its WAL. */
  restart(): Promise<void>;
}

/**
 * What the workers contend for: a mutex, or another exclusive primitive whose waiters are granted
 * the lock directly on a release (a semaphore of one permit, a read-write lock's write side, a fair
 * lock). The checker is the same: one holder at a time, fencing tokens accepted in order.
 */
export type FaultPrimitive = 'mutex' | 'semaphore' | 'write' | 'fair';

/** One worker process with its own proxy to every lock server (so faults can single it out). */
export interface FaultWorker {
  id: string;
  worker: Worker;
  proxies: FaultProxy[];
}

/** What a scenario's fault script may do while the workers run. */
export interface FaultContext {
  ttl: number;
  servers: readonly LockServer[];
  workers: readonly FaultWorker[];
  /** The Redis key of the lock the workers contend for. */
  lockKey: string;
  /** Cluster only: fails over the master that serves the lock key. */
  failover?: () => Promise<void>;
  /** A worker that has been inside its critical section for at least `held` ms. */
  holder(held?: number): Promise<FaultWorker>;
  /**
   * The worker that next reports a passed check of its signal, right before its (slow) write;
   * with `last`, only the check before a critical section's last write (its release follows).
   */
  nextCheck(last?: boolean): Promise<FaultWorker>;
  /**
   * Sets the wall-clock offset (ms from true time) of `servers` (default: every lock server), through
   * the LD_PRELOAD shim of test/harness/fake-clock.ts, checks it with TIME, and resolves 2 x TTL
   * later, noting how soon the holder of the moment stopped trusting its lease. Only for scenarios
   * with `serverClock`.
   */
  setServerClock?(wall: number, servers?: readonly LockServer[]): Promise<void>;
  /**
   * Blocks `target`'s event loop with a busy wait of `ms` (its timers fire late, nothing runs),
   * recorded like a pause so the checker can discount it from lags. Resolves when the stall ended.
   */
  stall(target: FaultWorker, ms: number): Promise<void>;
  /** SIGSTOP / SIGCONT of a worker, recorded so the checker can discount the pause from lags. */
  pause(target: FaultWorker): void;
  resume(target: FaultWorker): void;
  note(text: string): void;
  /** The fault just ended (the network healed, Redis woke up): Scenario.freeAfterHeal counts from here. */
  healed(): void;
}

export interface Scenario {
  id: string;
  title: string;
  /** Per worker index: a clock skew (see test/harness/skew-clock.ts). */
  skew?: (index: number) => { rate: number; offset: number } | undefined;
  /** Set when overlaps are expected (not something a lease can prevent): the reason. */
  mayOverlap?: string;
  /**
   * Set when those overlaps are a window an option chose, not physics: the option, and what the
   * default does instead (docs/safety.md lists the two kinds apart).
   */
  chosenBy?: string;
  /** Set when fencing tokens may go backwards in this scenario: the reason. */
  mayRegress?: string;
  /** The fault needs a proxy per worker (partitions, latency): not available in cluster mode. */
  needsProxy?: boolean;
  /** The workers' TTL for this scenario, given the run's (default: the run's). */
  ttl?: (ttl: number) => number;
  /** The lock servers run under the clock shim (test/harness/fake-clock.ts): needs gcc. */
  serverClock?: boolean;
  /** Extra Leasehold.connect() options for the workers, per mode. */
  connectExtra?: (mode: ModeName) => Record<string, unknown>;
  /**
   * The workers' `commandTimeout` for this TTL. Set, the run must also show that every release
   * and close() settled within it while Redis did not answer (verdict.ts says how close).
   */
  commandTimeout?: (ttl: number) => number;
  /**
   * After each heal the fault reports (`ctx.healed()`), a worker must hold the lock again within
   * this many ms: a name the holder could not give back during the fault is freed at once, not
   * after its TTL.
   */
  freeAfterHeal?: (ttl: number) => number;
  /** What a user must do where the lease alone cannot protect them. */
  advice: string;
  fault(ctx: FaultContext, rounds: number): Promise<void>;
}

export interface RunOptions {
  ttl: number;
  /** How often the scenario repeats its fault. */
  rounds: number;
  workers?: number;
  resource: FencedResource;
  /** Default 'mutex'. */
  primitive?: FaultPrimitive;
}

export interface RunResult extends CheckResult {
  scenario: string;
  mode: ModeName;
  primitive: FaultPrimitive;
  /** The TTL the workers ran with. */
  ttl: number;
  notes: string[];
  seconds: number;
}
