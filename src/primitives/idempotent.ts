import type { Routed } from '../engine/attempts.ts';
import type { Engine } from '../engine/engine.ts';
import type { Spec } from '../engine/spec.ts';
import { IdempotencyConflictError, LockLostError, OutcomeUnknownError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import {
  type AcquireOptions,
  checkAcquireOptions,
  checkKnownKeys,
  checkObject,
  fail,
  MAX_TTL,
} from '../options/index.ts';
import { loadScript } from '../scripts/index.ts';
import { layout } from './layout.ts';
import { type LeaseWork, withLease } from './with-lease.ts';

/** How long a result is kept by default: a day, Stripe's window for idempotency keys. */
export const DEFAULT_KEEP = 86_400_000;
/** The largest result stored, as JSON: 1 MiB. */
export const MAX_RESULT = 1_048_576;
/** The longest fingerprint: a hash fits many times over; a whole request body does not belong here. */
const MAX_FINGERPRINT = 1_024;

/** Options of `lh.idempotent()`: those of `acquire()`, and what is kept of a run. */
export interface IdempotentOptions extends Omit<AcquireOptions, 'renew' | 'minHold'> {
  /**
   * How long the result is kept, ms: a later call with the key within it gets the result without
   * running `fn`. Also how long an unfinished run is remembered (OutcomeUnknownError).
   * @default 86_400_000 (a day)
   */
  keep?: number;
  /**
   * What the request was (a hash of its body): the same key with another fingerprint is refused
   * (IdempotencyConflictError) rather than answered with another request's result. At most 1,024
   * characters.
   */
  fingerprint?: string;
  /**
   * A run for the key started and never finished (its holder crashed or lost the lock): run `fn`
   * again rather than reject with OutcomeUnknownError. Only for work that is safe to repeat.
   * @default false
   */
  retryUnknown?: boolean;
}

const scripts = {
  read: loadScript('idempotent-read'),
  begin: loadScript('idempotent-begin'),
  end: loadScript('idempotent-end'),
};

/** An idempotency key's lock (a mutex: the same key), and its record beside it. */
export const idempotentLayout = layout({ lock: '', record: 'idem' });

/** The record's scripts run on one Redis (or PostgreSQL): not on a quorum. */
const RECORD: Routed = { operation: 'idempotent' };

interface Recorded {
  state: string;
  fp: string;
  result: string;
  at: string;
  owner: string;
  fence: string;
}

/**
 * `lh.idempotent(key, fn, options)` (docs/idempotency.md): runs `fn` once per key across every
 * process, under the key's lock, and stores its result for `keep` ms; callers that come while it
 * runs wait for the lock and then read the result; a run that never finished makes later callers
 * reject with OutcomeUnknownError. `mutex` is the instance's mutex spec.
 */
export async function idempotent<T>(
  engine: Engine,
  mutex: Spec<unknown, undefined>,
  key: string,
  fn: LeaseWork<Lease, T>,
  options: IdempotentOptions | undefined,
  defaults: { ttl: number },
): Promise<T> {
  const o = checkObject(options, 'options');
  checkKnownKeys(
    o,
    ['timeout', 'signal', 'ttl', 'owner', 'keep', 'fingerprint', 'retryUnknown'],
    'idempotent options',
  );
  const { keep: keepOption, fingerprint: fp = '', retryUnknown = false, ...rest } = o;
  const keep = keepOption === undefined ? DEFAULT_KEEP : checkKeep(keepOption);
  if (typeof fp !== 'string' || fp.length > MAX_FINGERPRINT) {
    fail('fingerprint', `a string of at most ${MAX_FINGERPRINT} characters`, fp);
  }
  if (typeof retryUnknown !== 'boolean') fail('retryUnknown', 'true or false', retryUnknown);
  const acquire = checkAcquireOptions(rest, defaults);
  const keys = idempotentLayout.keys(engine.prefix, key);
  const run = (call: { script: (typeof scripts)[keyof typeof scripts]; args: string[] }) =>
    engine.eval(
      RECORD,
      { script: call.script, keys: [keys.lock, keys.record], args: call.args },
      'idempotent',
    );
  // What is recorded already: a stored result needs no lock; an unfinished run whose lock nobody
  // holds any more will never finish.
  const seen = toRecorded(await run({ script: scripts.read, args: [] }));
  if (seen.state === 'done') return answer(key, seen, fp);
  if (seen.state === 'running' && !seen.locked && !retryUnknown) {
    throw unknown(key, seen, fp);
  }
  return withLease(
    () => engine.acquire(mutex, key, undefined, acquire),
    async (lease: Lease, signal: AbortSignal) => {
      const begin = async (replace: boolean) =>
        (await run({
          script: scripts.begin,
          args: [lease.stored, fp, String(keep), String(lease.fencingToken), replace ? '1' : '0'],
        })) as unknown[];
      let reply = await begin(false);
      if (reply[0] === 0 && reply[1] === 'running' && retryUnknown) reply = await begin(true);
      if (reply[0] === -1)
        throw lease.signal.reason ?? new LockLostError(key, 'taken', 'lost before the run began');
      if (reply[0] === 0) {
        const [, state, rfp, result, at, owner, fence] = reply.map(String);
        const found: Recorded = {
          state: state!,
          fp: rfp!,
          result: result!,
          at: at!,
          owner: owner!,
          fence: fence!,
        };
        if (found.state === 'done') return answer<T>(key, found, fp);
        throw unknown(key, found, fp);
      }
      let result: T;
      try {
        result = await fn(lease, signal);
      } catch (error) {
        await run({ script: scripts.end, args: [lease.stored, 'failed', '', String(keep)] }).catch(() => {});
        throw error;
      }
      // Not storable (too large, not JSON): the run happened, so it stays "running" and later
      // callers learn its outcome is unknown, rather than run it again.
      const json = encode(result);
      // A holder that lost the lock before storing cannot know who ran since: nothing is stored,
      // the run stays unfinished for later callers, and this caller still gets what its run returned.
      await run({ script: scripts.end, args: [lease.stored, 'done', json, String(keep)] });
      return result;
    },
    options,
    'idempotent',
  );
}

function checkKeep(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TTL) {
    fail('keep', `a whole number of milliseconds >= 1 and <= ${MAX_TTL}`, value);
  }
  return value;
}

function toRecorded(reply: unknown): Recorded & { locked: boolean } {
  const r = Array.isArray(reply) ? reply.map((v) => (v === null || v === undefined ? '' : String(v))) : [];
  const [state = '', fp = '', result = '', at = '', owner = '', fence = '', locked = '0'] = r;
  return { state, fp, result, at, owner, fence, locked: locked === '1' };
}

/** The stored result, as this request's: its fingerprint must match. */
function answer<T>(key: string, found: Recorded, fp: string): T {
  if (found.fp !== fp) throw new IdempotencyConflictError(key);
  return (JSON.parse(found.result) as { v?: T }).v as T;
}

function unknown(key: string, found: Recorded, fp: string): Error {
  if (found.fp !== fp) return new IdempotencyConflictError(key);
  const owner = found.owner.split('~').slice(2).join('~') || undefined;
  return new OutcomeUnknownError(key, Number(found.at), owner, BigInt(found.fence || '0'));
}

/** The result as stored: `{"v": result}` (undefined stays undefined), at most MAX_RESULT bytes. */
function encode(result: unknown): string {
  let json: string;
  try {
    json = JSON.stringify({ v: result });
  } catch (error) {
    throw new TypeError(
      `leasehold: idempotent's result must be JSON-serialisable (${(error as Error).message})`,
    );
  }
  if (Buffer.byteLength(json) > MAX_RESULT) {
    throw new RangeError(`leasehold: idempotent's result is over ${MAX_RESULT} bytes as JSON: not stored`);
  }
  return json;
}
