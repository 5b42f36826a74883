import type { Lease } from '../lease.ts';

/** What the `with` forms run: the lease, and a signal that aborts when the work must stop. */
export type LeaseWork<L extends Lease, T> = (lease: L, signal: AbortSignal) => Promise<T> | T;

/**
 * Every `with` form (`lh.withLock`, `sem.withPermit`, `rw.withRead`, `rw.withWrite`,
 * `fair.withLock`): holds the lease `take` resolves with while `fn` runs, and releases it after,
 * whether `fn` returns or throws. `fn` gets the lease and a signal that aborts when the lease is
 * lost or when the caller's `signal` aborts, so that passing it on stops the work either way
 * (the caller's signal alone would stop only the wait).
 */
export async function withLease<L extends Lease, T>(
  take: () => Promise<L>,
  fn: unknown,
  options: unknown,
  method: string,
): Promise<T> {
  if (typeof fn !== 'function') throw new TypeError(`leasehold: ${method} needs a function to run`);
  const lease = await take();
  const signal = (options as { signal?: unknown } | undefined)?.signal;
  const caller = signal instanceof AbortSignal ? signal : undefined;
  const both = caller === undefined ? lease.signal : AbortSignal.any([lease.signal, caller]);
  try {
    return await (fn as LeaseWork<L, T>)(lease, both);
  } finally {
    await lease.release().catch(() => {});
  }
}
