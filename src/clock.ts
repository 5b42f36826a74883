import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds: immune to wall-clock jumps (NTP steps, a user's date change). */
export const monotonic = (): number => performance.now();

/**
 * Clock drift and timer slack to allow for between this process and Redis over one TTL,
 * as in the Redlock paper: 1% of the TTL plus 2 ms.
 */
export const drift = (ttl: number): number => Math.floor(ttl * 0.01) + 2;
