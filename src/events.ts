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
  /** A connection dropped; leases stay valid until their validity runs out unconfirmed. */
  disconnected: { error: Error | undefined };
  /** Tracking is armed again after a (re)connect; every lease is being re-verified. */
  reconnected: Record<string, never>;
}
