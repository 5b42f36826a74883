/** Requests the parent sends to a worker; each gets exactly one `Reply` with the same `id`. */
export type Request =
  | { id: number; cmd: 'init'; contender: string; url: string }
  | { id: number; cmd: 'close'; contender: string }
  | { id: number; cmd: 'clock' }
  | { id: number; cmd: 'mem' }
  | { id: number; cmd: 'cpu' }
  | { id: number; cmd: 'handoff'; contender: string; name: string; ttl: number; hold: number }
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
  | { id: number; cmd: 'releaseAll' };

/** One-way messages from the parent. */
export type Notice =
  | { notice: 'held'; by: number; t: number }
  | { notice: 'stop' }
  | { notice: 'abort'; tag: string }
  | { notice: 'exit' };

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

/** Unprompted messages from a worker (timestamps: performance.timeOrigin + performance.now()). */
export type Event =
  | { event: 'acq'; worker: number; t: number }
  | { event: 'rel'; worker: number; t: number }
  | { event: 'acquired'; worker: number; name: string; t: number }
  | { event: 'lost'; worker: number; name: string; t: number }
  | { event: 'ready'; worker: number };

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

export interface WaitResult {
  acquired: { name: string; t: number }[];
  aborted: number;
  failed: string[];
}
