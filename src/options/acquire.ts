import {
  checkKnownKeys,
  checkObject,
  checkOwner,
  checkSignal,
  checkTimeout,
  checkTtl,
  fail,
  MAX_TTL,
} from './check.ts';

/** Options shared by every acquire-style call. */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in ms. `0` makes one attempt. `Infinity` waits until
   * `signal` aborts or the instance closes. Any length: beyond setTimeout's 2^31-1 ms (about
   * 24.8 days) it still waits that long.
   * @default Infinity
   * @example await lh.acquire('cron:purge', { timeout: 30 * 24 * 3_600_000 }); // 30 days
   */
  timeout?: number;
  /** Aborting it stops the wait; the call rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Lease validity in ms; automatic extension keeps renewing it while held. From 12 ms to
   * 2,147,483,647 ms (24 d 20 h).
   * @default the instance's `ttl`
   */
  ttl?: number;
  /**
   * Who holds the lease, as `lh.inspect()`, `leasehold top` and the dashboard show it. Stored
   * inside the lease's value in Redis (no extra key or command). At most 200 characters.
   * @default the instance's `owner` (by default `host:pid:process title`)
   * @example
   * await lh.acquire('cron:purge', { owner: 'billing-worker-3' });
   */
  owner?: string;
  /**
   * Whether the lease is extended automatically while held. `false`: it ends at its `ttl` unless
   * `extend()` or `release()` comes first (a job that must not outlive its slot). Its holder still
   * hears at once of a loss, and `signal` aborts when the TTL runs out.
   * @default true
   * @example await lh.tryAcquire('report', { ttl: 60_000, renew: false });
   */
  renew?: boolean;
  /**
   * The least time the name stays taken after the lease was granted, in ms: `release()` before
   * then keeps it taken until then (the lease ends for its holder at once; waiters get the name
   * when the hold ends). ShedLock's lockAtLeastFor: a job that takes 1 ms must not run again on a
   * replica whose timer fires a few ms later. 0 releases at once.
   * @default 0
   * @example await lh.tryAcquire('cron:report:2026-11-28T10:00', { minHold: 50_000 });
   */
  minHold?: number;
}

export interface ValidAcquireOptions {
  timeout: number;
  signal: AbortSignal | undefined;
  ttl: number;
  /** The owner to stamp, or undefined for the instance's. */
  owner: string | undefined;
  renew: boolean;
  minHold: number;
}

const ACQUIRE_KEYS = ['timeout', 'signal', 'ttl', 'owner', 'renew', 'minHold'];

export function checkAcquireOptions(options: unknown, defaults: { ttl: number }): ValidAcquireOptions {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ACQUIRE_KEYS, 'acquire options');
  return {
    timeout: o['timeout'] === undefined ? Number.POSITIVE_INFINITY : checkTimeout(o['timeout']),
    signal: checkSignal(o['signal']),
    ttl: o['ttl'] === undefined ? defaults.ttl : checkTtl(o['ttl']),
    owner: o['owner'] === undefined ? undefined : checkOwner(o['owner']),
    renew: o['renew'] === undefined ? true : checkRenew(o['renew']),
    minHold: o['minHold'] === undefined ? 0 : checkMinHold(o['minHold']),
  };
}

function checkRenew(value: unknown): boolean {
  if (typeof value !== 'boolean') fail('renew', 'true or false', value);
  return value;
}

function checkMinHold(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_TTL) {
    fail('minHold', `a finite number of milliseconds >= 0 and <= ${MAX_TTL}`, value);
  }
  return value;
}

/**
 * The options of a one-attempt call (tryAcquire, forceAcquire, tryRead, tryWrite): `ttl`, `owner`
 * and the lease modes. A `timeout` or `signal` there is a TypeError: one attempt never waits.
 * @example await lh.tryAcquire('cron:purge', { ttl: 60_000, owner: 'billing-worker-3' });
 */
export type OnceOptions = Pick<AcquireOptions, 'ttl' | 'owner' | 'renew' | 'minHold'>;

/**
 * Validates a one-attempt call's options: `ttl` and `owner`. A `timeout` or `signal` there is
 * refused rather than ignored: `tryAcquire(name, { timeout: 5_000 })` would otherwise make one
 * attempt while its caller believed it waited.
 */
export function checkOnceOptions(
  options: unknown,
  defaults: { ttl: number },
  where: string,
): ValidAcquireOptions {
  const o = checkObject(options, 'options');
  checkKnownKeys(
    o,
    ['ttl', 'owner', 'renew', 'minHold'],
    `${where} options (one attempt: no timeout or signal)`,
  );
  return checkAcquireOptions(o, defaults);
}
