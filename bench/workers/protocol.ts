import type { ClusterCellRequest } from '../cluster/protocol.ts';

/** Requests the parent sends to a worker; each gets exactly one `Reply` with the same `id`. */
export type Request =
  | { id: number; cmd: 'init'; contender: string; url: string }
  | { id: number; cmd: 'close'; contender: string }
  | { id: number; cmd: 'clock' }
  | { id: number; cmd: 'mem' }
  | { id: number; cmd: 'cpu' }
  | {
      id: number;
      cmd: 'handoff';
      contender: string;
      name: string;
      ttl: number;
      hold: number;
      holdMax?: number;
    }
  | {
      id: number;
      cmd: 'hold';
      contender: string;
      names: string[];
      ttl: number;
      gap: number;
      concurrency: number;
    }
  | {
      id: number;
      cmd: 'wait';
      contender: string;
      names: string[];
      ttl: number;
      tag: string;
      release: boolean;
    }
  | { id: number; cmd: 'releaseAll' }
  /** How many held leases' loss signals fired so far. */
  | { id: number; cmd: 'lost' }
  | {
      id: number;
      cmd: 'herd';
      contender: string;
      name: string;
      ttl: number;
      /** Callers that wait in this process. */
      callers: number;
      /** This process takes the lock first (one caller more, the first holder). */
      first: boolean;
    }
  /** bench/cluster/worker.ts: acquire+release on the cell's names, unmeasured, then measured. */
  | ({ id: number; cmd: 'cluster-warm'; warmupMs: number } & ClusterCellRequest)
  | ({ id: number; cmd: 'cluster-run'; windowMs: number } & ClusterCellRequest);

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
  | { event: 'acquired'; worker: number; name: string; t: number }
  | { event: 'lost'; worker: number; name: string; t: number }
  | { event: 'ready'; worker: number }
  | { event: 'herd-acq'; worker: number; t: number }
  /** `t`: just before the release is sent. */
  | { event: 'herd-rel'; worker: number; t: number };

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
