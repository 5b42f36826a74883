import type { LeaseholdError } from './errors.ts';

/** Events a Leasehold instance emits (it is an EventEmitter; none of them is 'error'). */
export interface LeaseholdEvents {
  acquired: { name: string; fencingToken: bigint; waited: number };
  released: { name: string; fencingToken: bigint };
  lost: { name: string; fencingToken: bigint; error: LeaseholdError };
  /** An automatic extension (or a re-check after a notification) confirmed the lease. */
  extended: { name: string; fencingToken: bigint; ttl: number; expiresAt: number };
  /**
   * An automatic extension got no answer (Redis unreachable). It is retried; the lease stays
   * valid until `expiresAt` and is lost then if no retry succeeds.
   */
  'extension-failed': { name: string; fencingToken: bigint; error: Error; expiresAt: number };
  /**
   * A connection dropped (once per outage, however many reconnect attempts fail). With the
   * default `onDisconnect: 'abort'` its leases are lost at once; with 'reverify' they stay
   * valid until their validity runs out unconfirmed.
   */
  disconnected: { error: Error | undefined };
  /**
   * Tracking is armed again after an outage, after the first connect, and after the connection
   * moved to another server (a Sentinel failover, a Cluster slot move); every lease is re-verified.
   */
  reconnected: Record<string, never>;
  /**
   * The give-backs Redis has not confirmed changed: a release whose reply never came, the key of
   * an acquisition whose reply never came, a lease lost to a dropped connection. Each is queued
   * and retried (compare-and-delete) as soon as a connection works again, so a healed network
   * frees its names at once rather than after their TTL. `pending` counts them after the change
   * (also `lh.stats.pendingReleases`); `change` says what happened to the one about `name`:
   * 'queued', 'released' (Redis confirmed: given back, or no longer this process's), 'expired'
   * (its TTL has surely run out) or 'dropped' (Redis refused it, or the instance closed).
   */
  'pending-releases': {
    name: string;
    pending: number;
    change: 'queued' | 'released' | 'expired' | 'dropped';
  };
  /**
   * How this instance learns of changes switched: 'polling' when a notification canary failed
   * (CLIENT TRACKING refused, pushes dropped on the way, a server with other tracking rules;
   * `reason` says which), 'tracking' when a later canary (after a reconnect) proved pushes
   * again. Emitted once per change; with `notifications: 'auto'` also for the first verdict
   * when it is 'polling'.
   */
  notifications: { mode: 'tracking' | 'polling'; reason: Error | undefined };
}
