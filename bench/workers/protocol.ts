import type { Summary } from '../lib/stats.ts';
import type { StagesRun } from '../scenarios/stages.ts';
import type { LossRequest } from './loss.ts';

/** Where a worker's contender connects: one redis-server (or PostgreSQL) URL, or a Cluster's nodes. */
export type Target = { url: string } | { rootNodes: readonly string[] };

type Cmd<C extends string, T = unknown> = { id: number; cmd: C } & T;
type On = { contender: string; ttl: number };

/** Requests the parent sends to a worker; each gets exactly one `Reply` with the same `id`. */
export type Request =
  | Cmd<'init', { contender: string } & Target>
  | Cmd<'close', { contender: string }>
  | Cmd<'clock' | 'mem' | 'cpu' | 'releaseAll'>
  /** How many held leases' loss signals fired so far. */
  | Cmd<'lost'>
  | Cmd<'handoff', On & { name: string; hold: number; holdMax?: number }>
  | Cmd<'hold', On & { names: string[]; gap: number; concurrency: number }>
  | Cmd<'wait', On & { names: string[]; tag: string; release: boolean }>
  /** `callers` wait in this process; `first`: it takes the lock first (one caller more). */
  | Cmd<'herd', On & { name: string; callers: number; first: boolean }>
  | Cmd<'pairs', PairsRequest>
  /** One round of the loss scenario (bench/workers/loss.ts), after a full GC. */
  | Cmd<'loss', LossRequest>;

/**
 * Acquire + release on free locks (uncontended, cluster, budget): `lanes` loops, each on a name
 * of its own, first unmeasured (`warmup` pairs or `warmupMs`), then measured: `count` pairs in
 * all, or for `ms`.
 */
export interface PairsRequest {
  contender: string;
  lanes: number;
  ttl: number;
  /** Lock-name prefix, distinct per cell, so that no cell meets another's keys. */
  tag: string;
  warmup?: number;
  warmupMs?: number;
  count?: number;
  ms?: number;
  /** Also count the bytes allocated on the JS heap (bench/workers/pairs.ts says how). */
  allocations?: boolean;
}

export interface PairsResult {
  pairs: number;
  seconds: number;
  /** acquire + release, ms */
  latency: Summary;
  /** The process's CPU (user + system) over the measured pairs, ms. */
  cpu: number;
  /** Bytes allocated on the JS heap over the measured pairs (`allocations` only). */
  allocated?: number;
}

/** One-way messages from the parent. */
export type Notice =
  | { notice: 'held'; by: number; t: number }
  | { notice: 'stop' }
  | { notice: 'abort'; tag: string }
  | { notice: 'exit' }
  /** herd (bench/workers/herd.ts): the caller holding the lock here releases it now. */
  | { notice: 'herd-release' }
  /** herd: some caller acquired at `t`; a caller that released before `t` waits again. */
  | { notice: 'herd-held'; t: number }
  | { notice: 'herd-stop' };

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** Unprompted messages from a worker (timestamps: performance.timeOrigin + performance.now()). */
export type Event =
  | { event: 'acq'; worker: number; t: number }
  | { event: 'rel'; worker: number; t: number }
  | { event: 'ready'; worker: number }
  | { event: 'herd-acq'; worker: number; t: number }
  /** `t`: just before the release is sent. */
  | { event: 'herd-rel'; worker: number; t: number };

export interface HandoffRun {
  rounds: number;
  /** Each stage's timestamps, when the worker runs with the probe (bench --stages). */
  stages?: StagesRun;
}

export interface MemorySample {
  heapUsed: number;
  rss: number;
  external: number;
  arrayBuffers: number;
}

export interface CpuSample {
  /** user + system CPU time, ms. */
  cpu: number;
  /** wall clock, ms. */
  t: number;
}

export interface HoldResult {
  acquired: { name: string; t: number }[];
  ms: number;
}

export interface HerdResult {
  acquisitions: number;
  failed: string[];
}

export interface WaitResult {
  acquired: { name: string; t: number }[];
  aborted: number;
  failed: string[];
}
