import { checkKnownKeys, checkObject, checkOwner, checkSignal, checkTimeout, checkTtl } from './check.ts';

/** Options shared by every acquire-style call. */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in ms. `0` makes one attempt. `Infinity` waits until
   * `signal` aborts or the instance closes.
   * @default Infinity
   */
  timeout?: number;
  /** Aborting it stops the wait; the call rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Lease validity in ms; automatic extension keeps renewing it while held. At least 12 ms.
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
}

export interface ValidAcquireOptions {
  timeout: number;
  signal: AbortSignal | undefined;
  ttl: number;
  /** The owner to stamp, or undefined for the instance's. */
  owner: string | undefined;
}

export function checkAcquireOptions(options: unknown, defaults: { ttl: number }): ValidAcquireOptions {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['timeout', 'signal', 'ttl', 'owner'], 'acquire options');
  return {
    timeout: o['timeout'] === undefined ? Number.POSITIVE_INFINITY : checkTimeout(o['timeout']),
    signal: checkSignal(o['signal']),
    ttl: o['ttl'] === undefined ? defaults.ttl : checkTtl(o['ttl']),
    owner: o['owner'] === undefined ? undefined : checkOwner(o['owner']),
  };
}
