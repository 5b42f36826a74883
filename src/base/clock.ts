import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds: immune to wall-clock jumps (NTP steps, a user's date change). */
export const monotonic = (): number => performance.now();

/**
 * Clock drift and timer slack to allow for between this process and Redis over one TTL,
 * as in the Redlock paper: 1% of the TTL plus 2 ms.
 */
export const drift = (ttl: number): number => Math.floor(ttl * 0.01) + 2;

/**
 * The end of a lease's validity on this process's monotonic clock: `ttl` counted from when the
 * command that set it was sent (Redis started the TTL later), less drift. The one formula every
 * acquisition, grant and extension uses.
 */
export const validUntil = (sentAt: number, ttl: number): number => sentAt + ttl - drift(ttl);

/** The least validity a fresh lease must have: a round trip and a timer turn on a loaded host. */
export const MIN_VALIDITY = 10;

/**
 * The smallest TTL that leaves MIN_VALIDITY after drift: below it, a lease is lost before the
 * reply that grants it is read (ttl 2 leaves 0 ms), and acquire() could never succeed.
 */
export const MIN_TTL = ((): number => {
  let ttl = 1;
  while (ttl - drift(ttl) < MIN_VALIDITY) ttl += 1;
  return ttl;
})();
