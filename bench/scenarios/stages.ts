// Where a handoff by direct grant spends its gap, stage by stage, from the holder's release() to
// the waiter's acquire() resolving (`npm run bench -- --only=idleHandoff --stages`): the worker side
// (a probe, installed when BENCH_STAGES=1, that timestamps each stage without touching src/) and the
// parent side (per-handoff stage durations on the parent's clock). The probe wraps every client
// socket this process opens (node:net's `net.client.socket` channel): its writes (the release and
// acquire scripts, by their SHA1s) and its 'data' events (a grant is the pub/sub message on a
// `<prefix>:grants:<token>` channel, docs/direct-grants.md), and listens to the
// `leasehold:acquired` diagnostics channel. It costs a little on every read and write: the gaps of a
// --stages run are its own. Handoffs that came otherwise (a waiter's own attempt after a push or a
// timer) are counted, not split.
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { ACQUIRE_SHA, RELEASE_SHA } from '../contenders/bare.ts';
import { now, type Summary, summarize } from '../lib/stats.ts';

/** What one acquisition went through (times on the worker's clock). */
export interface AcquisitionRecord {
  /** acquire() resolved in user code. */
  t: number;
  /** The latest acquire attempt's reply read (to tell a grant from an attempt that won). */
  reply?: number;
  /** The first grant message read during this acquisition, and `leasehold:acquired` after it. */
  grantRead?: number;
  grantEvent?: number;
}

export interface StagesRun {
  acquisitions: AcquisitionRecord[];
  /** release() called, and the release script written. */
  releases: { t: number; written?: number }[];
  /** When each acquire attempt was written (every attempt counts: a herd shows here). */
  attempts: number[];
}

/** Worker side: null unless BENCH_STAGES=1. */
export class Probe {
  readonly run: StagesRun = { acquisitions: [], releases: [], attempts: [] };
  #current: AcquisitionRecord = { t: 0 };
  #releaseWritten: number | undefined;

  static install(): Probe | undefined {
    if (process.env['BENCH_STAGES'] !== '1') return undefined;
    const probe = new Probe();
    diagnosticsChannel.subscribe('net.client.socket', (m) => probe.#wrap((m as { socket: Socket }).socket));
    diagnosticsChannel.subscribe('leasehold:acquired', () => {
      if (probe.#current.grantRead !== undefined) probe.#current.grantEvent ??= now();
    });
    return probe;
  }

  /** Around each acquire() and release() of the handoff loop. */
  beforeAcquire(): void {
    this.#current = { t: 0 };
  }
  acquired(t: number): void {
    this.run.acquisitions.push({ ...this.#current, t });
  }
  beforeRelease(): void {
    this.#releaseWritten = undefined;
  }
  released(t: number): void {
    const written = this.#releaseWritten;
    this.run.releases.push({ t, ...(written === undefined ? {} : { written }) });
  }

  #wrap(socket: Socket): void {
    const probe = this;
    let awaitingReply = false;
    const emit = socket.emit as (this: Socket, event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'data') {
        const t = now();
        if (awaitingReply) probe.#current.reply = t;
        awaitingReply = false;
        const chunk = args[0];
        if (Buffer.isBuffer(chunk) && chunk.includes(':grants:') && chunk.includes('message'))
          probe.#current.grantRead ??= t;
      }
      return emit.call(this, event, ...args);
    } as Socket['emit'];
    // Socket#connect() puts the prototype's write back (net.js), after this channel fired.
    socket.prependOnceListener('connect', () => {
      const write = socket.write as (...a: unknown[]) => boolean;
      socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]): boolean {
        if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) {
          if (chunk.includes(ACQUIRE_SHA)) {
            probe.run.attempts.push(now());
            awaitingReply = true;
          } else if (probe.#releaseWritten === undefined && chunk.includes(RELEASE_SHA)) {
            probe.#releaseWritten = now();
          }
        }
        return write.call(this, chunk, ...rest);
      } as Socket['write'];
    });
  }
}

/** The stages of a handoff by direct grant, in order; they add up to its gap. */
export const GRANT_STAGES = {
  release: 'holder: release() called → release script written',
  server: 'release written → grant message read in the waiter (Redis, kernel, scheduling)',
  settle: 'grant read → `leasehold:acquired` published (client parse, library)',
  resume: 'published → acquire() resolved in user code (promise hops)',
} as const;

export interface StagesSummary {
  handoffs: number;
  attemptsPerHandoff: number;
  /** Handoffs delivered by a grant: how many, their gap and stages (ms). */
  grant: { n: number; gap: Summary; stages: Partial<Record<keyof typeof GRANT_STAGES, Summary>> };
}

/** A grant read this long before the release was written belongs to a previous handoff. */
const TOLERANCE = 0.05;

/**
 * Release-to-acquire handoffs between different workers inside [from[k], to[k]] (parent clock),
 * every round k pooled; `runs[k][i]` came from the worker with clock offset `offsets[i]`.
 */
export function stages(
  runs: readonly StagesRun[][],
  offsets: readonly number[],
  from: number[],
  to: number[],
): StagesSummary {
  const samples: Record<'gap' | keyof typeof GRANT_STAGES, number[]> = {
    gap: [],
    release: [],
    server: [],
    settle: [],
    resume: [],
  };
  let handoffs = 0;
  let attempts = 0;
  runs.forEach((round, k) => {
    type Item = { worker: number; t: number } & (
      | { acq: AcquisitionRecord }
      | { rel: StagesRun['releases'][number] }
    );
    const items: Item[] = [];
    const inside = (t: number) => t >= from[k]! && t <= to[k]!;
    round.forEach((run, worker) => {
      const off = offsets[worker] ?? 0;
      for (const acq of run.acquisitions) items.push({ worker, t: acq.t - off, acq });
      for (const rel of run.releases) items.push({ worker, t: rel.t - off, rel });
      attempts += run.attempts.filter((t) => inside(t - off)).length;
    });
    items.sort((a, b) => a.t - b.t);
    let last: Extract<Item, { rel: unknown }> | undefined;
    for (const item of items) {
      if ('rel' in item) last = item;
      else if (last !== undefined && last.worker !== item.worker && inside(item.t)) {
        handoffs++;
        const w = offsets[item.worker] ?? 0;
        const at = (x: number | undefined) => (x === undefined ? Number.NaN : x - w);
        const released =
          last.rel.written === undefined ? Number.NaN : last.rel.written - (offsets[last.worker] ?? 0);
        const [grant, reply] = [at(item.acq.grantRead), at(item.acq.reply)];
        // By grant: its message came after the release, and before the reply to any attempt since.
        if (!(grant >= released - TOLERANCE) || (reply >= released - TOLERANCE && reply < grant)) continue;
        const published = item.acq.grantEvent === undefined ? item.t : at(item.acq.grantEvent);
        samples.gap.push(item.t - last.t);
        samples.release.push(released - last.t);
        samples.server.push(grant - released);
        samples.settle.push(published - grant);
        samples.resume.push(item.t - published);
      }
    }
  });
  const keys = Object.keys(GRANT_STAGES) as (keyof typeof GRANT_STAGES)[];
  return {
    handoffs,
    attemptsPerHandoff: attempts / handoffs,
    grant: {
      n: samples.gap.length,
      gap: summarize(samples.gap),
      stages: Object.fromEntries(keys.map((s) => [s, summarize(samples[s])])),
    },
  };
}
