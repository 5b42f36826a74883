import type { ResourceEntry } from './resource.ts';

/**
 * The safety checker: pure analysis of what the workers reported and what the protected resource
 * logged. All times are ms on the host's monotonic clock (hostNow(), test/harness/host-clock.ts), one
 * clock for every process and immune to a skewed clock; the resource's log is moved onto it.
 *
 * Definitions (docs/safety.md repeats them):
 * - A lease's *trusted interval* is [enter, end), where enter is when acquire() resolved in the
 *   holder and end = min(exit, abort, validity end): exit is when the holder left its critical
 *   section (before release()), abort is when `lease.signal` fired, validity end is the library's
 *   own estimate (`lease.expiresAt` after the last confirmed extension, converted to true time).
 *   After validity end every read of `lease.signal` reports aborted (the getter checks), so the
 *   holder can no longer be told it holds the lock: that is "its signal was aborted at the time",
 *   also for a process that was SIGSTOPped and has not run since.
 * - An *overlap* is two leases (different fencing tokens) whose trusted intervals intersect. Each
 *   carries its cause: what ended the first holder's trust (its exit, an abort and its reason, or
 *   validity running out) and what let the second in (the first one's release, which found its key,
 *   or expiry: the key was gone when the first released, or the first never released).
 * - A *stale write* is an attempt whose token is lower than the highest the resource had accepted;
 *   accepting one is a violation, rejecting one is fencing doing its job.
 * - A *late write* is an accepted write that reached the resource after its lease's trusted interval
 *   ended (the holder checked the signal, then paused or was delayed): harmless only because no
 *   newer holder had written yet; fencing, not the lease, decides.
 * - *Signal lag* of a lease whose validity lapsed while held (validity end before exit):
 *   abort - max(validity end, enter), minus any time the holder process was SIGSTOPped in between
 *   (a stopped process runs no code). A lapse with no abort before exit counts exit instead of abort.
 *   A lease whose validity had ended before acquire() resolved is *dead on arrival*.
 */

/** One NDJSON message from a fenced worker. */
export type WorkerEvent = { worker: string; type: string; [key: string]: unknown };

/** A span during which one worker's process was SIGSTOPped. */
export interface Pause {
  worker: string;
  from: number;
  to: number;
}

export interface LeaseRecord {
  worker: string;
  token: bigint;
  enter: number;
  validityEnd: number;
  abort: number | undefined;
  abortReason: string | undefined;
  exit: number | undefined;
  released: string | undefined;
  /** When release() returned. */
  releasedAt: number | undefined;
  checks: number;
  /** End of the trusted interval. */
  end: number;
}

/** What ended a holder's trust: the earliest of its exit, its signal's abort, its validity. */
export type TrustEnd = 'exit' | `abort: ${string}` | 'validity';

export interface Overlap {
  a: { worker: string; token: bigint };
  b: { worker: string; token: bigint };
  ms: number;
  /** What ended the first holder's trust. */
  firstEnd: TrustEnd;
  /** What let the second holder in: the first one's release (it found its key) or expiry. */
  secondIn: 'release' | 'expiry';
  /** One line with the timeline, relative to the second holder's entry. */
  cause: string;
}

export interface CheckResult {
  criticalSections: number;
  writes: { accepted: number; rejected: number };
  overlaps: Overlap[];
  staleAccepted: number;
  staleRejected: number;
  lateAccepted: number;
  /** Leases whose fencing token was not above every token seen earlier (in order of acquisition). */
  fenceRegressions: number;
  lapses: number;
  /** Leases whose validity had already ended when acquire() resolved (the reply came too late). */
  deadOnArrival: number;
  worstLag: number;
  lapsesWithoutAbort: number;
  /** The leases behind `worstLag` and `lapsesWithoutAbort`, for failure messages. */
  lapseDetails: string[];
  abortReasons: Record<string, number>;
  errors: string[];
  /** The longest `release()` (exit to its settling), in ms: how long a call waited on Redis. */
  worstRelease: number;
  /** Releases that had not settled when the run ended (a call that hung). */
  unsettledReleases: number;
  /** The longest `close()` of a worker at the end of the run, in ms. */
  worstClose: number;
  /** Per heal the fault reported (FaultContext.healed): ms until a worker next entered. */
  healGaps: number[];
}

/** Builds one record per lease from the workers' messages. */
export function leaseRecords(events: readonly WorkerEvent[]): LeaseRecord[] {
  const byKey = new Map<string, LeaseRecord>();
  for (const event of events) {
    if (typeof event['token'] !== 'string') continue;
    const key = `${event.worker}/${event['token']}`;
    const at = Number(event['at']);
    const validityEnd = typeof event['validityEnd'] === 'number' ? event['validityEnd'] : undefined;
    let record = byKey.get(key);
    if (event.type === 'enter') {
      record = {
        worker: event.worker,
        token: BigInt(event['token']),
        enter: at,
        validityEnd: validityEnd ?? at,
        abort: undefined,
        abortReason: undefined,
        exit: undefined,
        released: undefined,
        releasedAt: undefined,
        checks: 0,
        end: at,
      };
      byKey.set(key, record);
      continue;
    }
    if (record === undefined) continue;
    // The validity end known at an abort is the one that counts; later messages may not refresh it.
    if (validityEnd !== undefined && record.abort === undefined) record.validityEnd = validityEnd;
    if (event.type === 'check') record.checks += 1;
    if (event.type === 'abort') {
      record.abort = at;
      record.abortReason = String(event['reason']);
    }
    if (event.type === 'exit') {
      record.exit = at;
      record.released = String(event['released']);
      if (typeof event['releasedAt'] === 'number') record.releasedAt = event['releasedAt'];
    }
  }
  const records = [...byKey.values()].sort((a, b) => a.enter - b.enter);
  for (const r of records) {
    r.end = Math.max(r.enter, Math.min(r.exit ?? Infinity, r.abort ?? Infinity, r.validityEnd));
  }
  return records;
}

/** Milliseconds of [from, to) during which `worker` was SIGSTOPped. */
export function pausedWithin(pauses: readonly Pause[], worker: string, from: number, to: number): number {
  let total = 0;
  for (const p of pauses) {
    if (p.worker !== worker) continue;
    total += Math.max(0, Math.min(to, p.to) - Math.max(from, p.from));
  }
  return total;
}

/** Every pair of leases whose trusted intervals intersect. */
export function findOverlaps(records: readonly LeaseRecord[]): Overlap[] {
  const overlaps: Overlap[] = [];
  for (let i = 0; i < records.length; i++) {
    const a = records[i]!;
    for (let j = i + 1; j < records.length; j++) {
      const b = records[j]!;
      if (b.enter >= a.end) continue;
      if (a.token === b.token && a.worker === b.worker) continue;
      const ms = Math.min(a.end, b.end) - Math.max(a.enter, b.enter);
      if (ms > 0) overlaps.push(overlap(a, b, ms));
    }
  }
  return overlaps;
}

/** What ended a lease's trust (see LeaseRecord.end). */
export function trustEnd(r: LeaseRecord): TrustEnd {
  if (r.exit !== undefined && r.end === Math.max(r.enter, r.exit)) return 'exit';
  if (r.abort !== undefined && r.end === Math.max(r.enter, r.abort)) return `abort: ${r.abortReason}`;
  return 'validity';
}

function overlap(a: LeaseRecord, b: LeaseRecord, ms: number): Overlap {
  const secondIn = a.released === 'true' ? 'release' : 'expiry';
  const rel = (t: number | undefined) => (t === undefined ? '-' : `${fmt(t - b.enter)} ms`);
  return {
    a: { worker: a.worker, token: a.token },
    b: { worker: b.worker, token: b.token },
    ms,
    firstEnd: trustEnd(a),
    secondIn,
    cause:
      `${a.worker} #${a.token} trusted until ${trustEnd(a)}; ${b.worker} #${b.token} got in by ${secondIn}` +
      ` (times from ${b.worker}'s entry: ${a.worker} validity end ${rel(a.validityEnd)}, abort` +
      ` ${rel(a.abort)}${a.abortReason === undefined ? '' : ` (${a.abortReason})`}, exit ${rel(a.exit)},` +
      ` release returned ${a.released ?? '-'} at ${rel(a.releasedAt)})`,
  };
}

/** Error codes an acquire may fail with while Redis is unreachable: expected under faults. */
const EXPECTED_ACQUIRE_CODES = new Set([
  'LEASEHOLD_ERR_REDIS_UNAVAILABLE',
  'LEASEHOLD_ERR_LOCK_TIMEOUT',
  'LEASEHOLD_ERR_QUORUM',
  // `durability: { replicas }` refuses an acquisition no replica acknowledged (after a failover).
  'LEASEHOLD_ERR_DURABILITY',
]);

export function check(
  events: readonly WorkerEvent[],
  resource: readonly ResourceEntry[],
  pauses: readonly Pause[] = [],
  exits: readonly { worker: string; code: number | null; signal: string | null }[] = [],
  heals: readonly number[] = [],
): CheckResult {
  const records = leaseRecords(events);
  const calls = settling(events, records, heals);
  const byToken = new Map(records.map((r) => [`${r.worker}/${r.token}`, r]));
  let staleAccepted = 0;
  let staleRejected = 0;
  let lateAccepted = 0;
  let highest: bigint | undefined;
  for (const entry of resource) {
    const stale = highest !== undefined && entry.token < highest;
    if (entry.accepted) {
      if (stale) staleAccepted += 1;
      highest = highest === undefined || entry.token > highest ? entry.token : highest;
      const lease = byToken.get(`${entry.writer}/${entry.token}`);
      if (lease !== undefined && entry.at > lease.end) lateAccepted += 1;
    } else if (stale) {
      staleRejected += 1;
    } else {
      // The resource refused a write it should have taken: report it, it would be a resource bug.
      staleAccepted += 1;
    }
  }
  let fenceRegressions = 0;
  let maxToken: bigint | undefined;
  for (const r of records) {
    if (maxToken !== undefined && r.token <= maxToken) fenceRegressions += 1;
    if (maxToken === undefined || r.token > maxToken) maxToken = r.token;
  }
  let lapses = 0;
  let worstLag = 0;
  let lapsesWithoutAbort = 0;
  let deadOnArrival = 0;
  const lapseDetails: string[] = [];
  const abortReasons: Record<string, number> = {};
  for (const r of records) {
    if (r.abortReason !== undefined) abortReasons[r.abortReason] = (abortReasons[r.abortReason] ?? 0) + 1;
    // The holder stopped trusting the lease at the abort or at its exit, whichever came first.
    const over = Math.min(r.abort ?? Infinity, r.exit ?? Infinity);
    if (over === Infinity || over <= r.validityEnd) continue;
    lapses += 1;
    if (r.validityEnd <= r.enter) deadOnArrival += 1;
    const unaborted = r.abort === undefined || r.abort > over;
    if (unaborted) lapsesWithoutAbort += 1;
    // The holder cannot hear of a lapse before it has the lease: count from the later of the two.
    const from = Math.max(r.validityEnd, r.enter);
    const lag = over - from - pausedWithin(pauses, r.worker, from, over);
    if (unaborted || lag > worstLag) {
      lapseDetails.push(
        `${r.worker} token ${r.token}: validity end ${fmt(r.validityEnd - r.enter)}, abort ` +
          `${r.abort === undefined ? '-' : fmt(r.abort - r.enter)} (${r.abortReason}), exit ` +
          `${r.exit === undefined ? '-' : fmt(r.exit - r.enter)} ms after enter; lag ${fmt(lag)} ms`,
      );
    }
    worstLag = Math.max(worstLag, lag);
  }
  const errors: string[] = [];
  for (const event of events) {
    if (event.type === 'error')
      errors.push(`${event.worker}: ${String(event['where'])}: ${String(event['message'])}`);
    if (event.type === 'acquire-error' && !EXPECTED_ACQUIRE_CODES.has(String(event['code']))) {
      errors.push(`${event.worker}: acquire failed: ${String(event['message'])}`);
    }
  }
  for (const exit of exits) {
    if (exit.code !== 0) errors.push(`${exit.worker}: exited with code ${exit.code} signal ${exit.signal}`);
  }
  const accepted = resource.filter((e) => e.accepted).length;
  return {
    criticalSections: records.length,
    writes: { accepted, rejected: resource.length - accepted },
    overlaps: findOverlaps(records),
    staleAccepted,
    staleRejected,
    lateAccepted,
    fenceRegressions,
    lapses,
    deadOnArrival,
    worstLag,
    lapsesWithoutAbort,
    lapseDetails,
    abortReasons,
    errors,
    ...calls,
  };
}

/** How long releases and close() took, which hung, and how soon a name was taken after each heal. */
function settling(
  events: readonly WorkerEvent[],
  records: readonly LeaseRecord[],
  heals: readonly number[],
): Pick<CheckResult, 'worstRelease' | 'unsettledReleases' | 'worstClose' | 'healGaps'> {
  const releasing = new Set<string>();
  for (const event of events) {
    if (event.type === 'releasing') releasing.add(`${event.worker}/${String(event['token'])}`);
  }
  let worstRelease = 0;
  let unsettledReleases = 0;
  for (const r of records) {
    const key = `${r.worker}/${r.token}`;
    if (r.releasedAt !== undefined && r.exit !== undefined) {
      worstRelease = Math.max(worstRelease, r.releasedAt - r.exit);
    } else if (releasing.has(key)) {
      unsettledReleases += 1;
    }
  }
  const closes = events.filter((e) => e.type === 'done').map((e) => Number(e['closeMs'] ?? 0));
  const enters = records.map((r) => r.enter);
  const healGaps = heals.map((heal) => {
    const next = enters.find((at) => at >= heal);
    return next === undefined ? Number.POSITIVE_INFINITY : next - heal;
  });
  return { worstRelease, unsettledReleases, worstClose: Math.max(0, ...closes), healGaps };
}

const fmt = (ms: number): string => ms.toFixed(1);
