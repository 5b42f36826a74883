// Turns the workers' stage records (bench/stages/worker.ts) into per-handoff stage durations on the
// parent's clock: each worker's timestamps are shifted by its measured clock offset.
import { type Summary, summarize } from '../lib/stats.ts';
import type { AcquisitionRecord, ReleaseRecord, StagesRun } from './worker.ts';

/** The stages, in order; a handoff's stages add up to its gap. */
export const STAGES = [
  ['release', 'holder: release() called → release script written'],
  ['server', 'release written → push read in the waiter (Redis, kernel, scheduling)'],
  ['parse', 'push read → dispatcher.invalidate() (client parse and dispatch)'],
  ['defer', 'dispatcher → waiter woken (the dispatcher’s setImmediate)'],
  ['attempt', 'delivered → acquire script written (library, client encode)'],
  ['reply', 'acquire written → reply read (Redis, herd, scheduling)'],
  ['settle', 'reply read → `leasehold:acquired` published (client parse, library)'],
  ['resume', 'published → acquire() resolved in user code (promise hops)'],
] as const;
export type Stage = (typeof STAGES)[number][0];

/**
 * The stages of a handoff by direct grant (docs/direct-grants.md): the release script granted the
 * lock and published it on the waiter's channel; no attempt of the waiter's is on the path.
 */
export const GRANT_STAGES = [
  ['release', 'holder: release() called → release script written'],
  ['server', 'release written → grant message read in the waiter (Redis, kernel, scheduling)'],
  ['settle', 'grant read → `leasehold:acquired` published (client parse, library)'],
  ['resume', 'published → acquire() resolved in user code (promise hops)'],
] as const;
export type GrantStage = (typeof GRANT_STAGES)[number][0];

/** One round's raw samples (ms), before pooling. */
export interface RoundSamples {
  gaps: number[];
  /** Gaps of the handoffs whose winning attempt was written after reading the release's push. */
  pushGaps: number[];
  stages: Record<Stage, number[]>;
  /** Gaps of the handoffs delivered by a grant message before any attempt's reply. */
  grantGaps: number[];
  grantStages: Record<GrantStage, number[]>;
  /** Push-driven handoffs where no setImmediate was scheduled while the push was handled. */
  undelivered: number;
  /** Acquire attempts written inside the window, by every worker. */
  attempts: number;
}

export interface CellResult {
  handoffs: number;
  pushDriven: number;
  undelivered: number;
  attemptsPerHandoff: number;
  gap: Summary;
  /** Over the push-driven handoffs only, as the stages are. */
  pushDrivenGap: Summary;
  /** Per round, gap p50 (ms). */
  roundGapP50: number[];
  stages: Partial<Record<Stage, Summary>>;
  grantDriven: number;
  grantDrivenGap: Summary;
  grantStages: Partial<Record<GrantStage, Summary>>;
}

/** Pools the rounds' samples of one cell. */
export function combine(rounds: readonly RoundSamples[]): CellResult {
  const handoffs = rounds.reduce((n, r) => n + r.gaps.length, 0);
  const stages: CellResult['stages'] = {};
  for (const [s] of STAGES) {
    const all = rounds.flatMap((r) => r.stages[s]);
    if (all.length > 0) stages[s] = summarize(all);
  }
  const grantStages: CellResult['grantStages'] = {};
  for (const [s] of GRANT_STAGES) {
    const all = rounds.flatMap((r) => r.grantStages[s]);
    if (all.length > 0) grantStages[s] = summarize(all);
  }
  return {
    handoffs,
    pushDriven: rounds.reduce((n, r) => n + r.pushGaps.length, 0),
    undelivered: rounds.reduce((n, r) => n + r.undelivered, 0),
    attemptsPerHandoff: rounds.reduce((n, r) => n + r.attempts, 0) / handoffs,
    gap: summarize(rounds.flatMap((r) => r.gaps)),
    pushDrivenGap: summarize(rounds.flatMap((r) => r.pushGaps)),
    roundGapP50: rounds.map((r) => summarize(r.gaps).p50),
    stages,
    grantDriven: rounds.reduce((n, r) => n + r.grantGaps.length, 0),
    grantDrivenGap: summarize(rounds.flatMap((r) => r.grantGaps)),
    grantStages,
  };
}

/** Pushes older than this before the release was written are a previous handoff's. */
const TOLERANCE = 0.05;

/**
 * Release-to-acquire handoffs between different workers inside [from, to] (parent clock);
 * `runs[i]` came from the worker with clock offset `offsets[i]` (worker minus parent, ms).
 */
export function analyse(
  runs: readonly StagesRun[],
  offsets: readonly number[],
  from: number,
  to: number,
): RoundSamples {
  type Item =
    | { kind: 'acq'; worker: number; t: number; record: AcquisitionRecord }
    | { kind: 'rel'; worker: number; t: number; record: ReleaseRecord };
  const items: Item[] = [];
  let attempts = 0;
  runs.forEach((run, worker) => {
    const off = offsets[worker] ?? 0;
    for (const record of run.acquisitions) items.push({ kind: 'acq', worker, t: record.t - off, record });
    for (const record of run.releases) items.push({ kind: 'rel', worker, t: record.t - off, record });
    attempts += run.attempts.filter((t) => t - off >= from && t - off <= to).length;
  });
  items.sort((a, b) => a.t - b.t);
  const gaps: number[] = [];
  const pushGaps: number[] = [];
  const samples = Object.fromEntries(STAGES.map(([s]) => [s, [] as number[]])) as Record<Stage, number[]>;
  const grantGaps: number[] = [];
  const grantSamples = Object.fromEntries(GRANT_STAGES.map(([s]) => [s, [] as number[]])) as Record<
    GrantStage,
    number[]
  >;
  let last: Extract<Item, { kind: 'rel' }> | undefined;
  let undelivered = 0;
  for (const item of items) {
    if (item.kind === 'rel') {
      last = item;
      continue;
    }
    if (last === undefined || last.worker === item.worker || item.t < from || item.t > to) continue;
    const gap = item.t - last.t;
    gaps.push(gap);
    const w = offsets[item.worker] ?? 0;
    const r = offsets[last.worker] ?? 0;
    const a = item.record.attempt;
    const released = last.record.written === undefined ? Number.NaN : last.record.written - r;
    const pushRead = a.pushRead === undefined ? Number.NaN : a.pushRead - w;
    const written = a.written - w;
    const reply = a.reply === undefined ? Number.NaN : a.reply - w;
    const g = item.record.grant;
    const grantRead = g === undefined ? Number.NaN : g.read - w;
    // Delivered by the grant: its message came after the release and before any reply to an
    // attempt sent since (an invalidation-driven attempt that answered "already yours" first
    // would have delivered it instead).
    if (grantRead >= released - TOLERANCE && !(reply >= released - TOLERANCE && reply < grantRead)) {
      grantGaps.push(gap);
      const published = g?.acquiredEvent === undefined ? item.t : g.acquiredEvent - w;
      grantSamples.release.push(released - last.t);
      grantSamples.server.push(grantRead - released);
      grantSamples.settle.push(published - grantRead);
      grantSamples.resume.push(item.t - published);
      continue;
    }
    if (!(pushRead >= released - TOLERANCE && written >= pushRead && reply >= written)) continue;
    pushGaps.push(gap);
    const delivered = a.delivered === undefined ? undefined : a.delivered - w;
    const scheduled = a.scheduled === undefined || delivered === undefined ? delivered : a.scheduled - w;
    if (delivered === undefined) undelivered++;
    const published = a.acquiredEvent === undefined ? undefined : a.acquiredEvent - w;
    samples.release.push(released - last.t);
    samples.server.push(pushRead - released);
    // A bare client has no dispatcher: it acts in the callback that read the push.
    samples.parse.push((scheduled ?? pushRead) - pushRead);
    samples.defer.push((delivered ?? pushRead) - (scheduled ?? pushRead));
    samples.attempt.push(written - (delivered ?? pushRead));
    samples.reply.push(reply - written);
    samples.settle.push((published ?? item.t) - reply);
    samples.resume.push(item.t - (published ?? item.t));
  }
  return { gaps, pushGaps, stages: samples, grantGaps, grantStages: grantSamples, undelivered, attempts };
}
