import type { LeaseholdEvents } from '../events.ts';
import type { Dispatcher } from '../notify/dispatcher.ts';
import type { Runner } from '../runners/runner.ts';
import type { GiveBacks } from './give-backs.ts';
import type { Grants } from './grants.ts';
import type { Renewer } from './renewer.ts';
import type { Warmth } from './warmth.ts';

/** What every primitive of one Leasehold instance shares. */
export interface Context {
  /** Where the lock specs' calls go: one Redis, or a quorum (independent masters, a key majority). */
  readonly runner: Runner;
  /** One Redis, for the specs that need one (semaphore, read-write, fair, election); none in quorum mode. */
  readonly single: Runner | undefined;
  readonly dispatcher: Dispatcher;
  /** Direct grants to waiting mutexes (one Redis whose driver can subscribe); else undefined. */
  readonly grants: Grants | undefined;
  readonly renewer: Renewer;
  /** The opt-in low-latency mode (connect option `lowLatency`): PINGs while waits are young. */
  readonly warmth?: Warmth | undefined;
  /** Give-backs Redis has not confirmed, retried when a connection works again. */
  readonly giveBacks: GiveBacks;
  readonly prefix: string;
  readonly ttl: number;
  /** How long a command may go unanswered (the drivers' watchdogs): close() waits no longer. */
  readonly commandTimeout: number;
  /** Polling interval for waiters without notifications, and back-off after a failed command. */
  readonly retryDelay: number;
  readonly closed: boolean;
  /** The owner stamped on leases whose acquire names none (computed once per instance). */
  readonly owner: string;
  emit<E extends keyof LeaseholdEvents>(event: E, payload: LeaseholdEvents[E]): void;
}
