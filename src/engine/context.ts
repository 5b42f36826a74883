import { randomBytes } from 'node:crypto';
import type { LeaseholdEvents } from '../events.ts';
import type { Dispatcher } from '../notify/dispatcher.ts';
import type { Renewer } from './renewer.ts';
import type { Runner } from './runner.ts';

/** What every primitive of one Leasehold instance shares. @internal */
export interface Context {
  /** Where the lock specs' calls go: one Redis, or a quorum (independent masters, a key majority). */
  readonly runner: Runner;
  /** One Redis, for the specs that need one (semaphore, read-write, fair, election); none in quorum mode. */
  readonly single: Runner | undefined;
  readonly dispatcher: Dispatcher;
  readonly renewer: Renewer;
  readonly prefix: string;
  readonly ttl: number;
  /** Polling interval for waiters without notifications, and back-off after a failed command. */
  readonly retryDelay: number;
  readonly closed: boolean;
  /** The owner stamped on leases whose acquire names none (computed once per instance). */
  readonly owner: string;
  emit<E extends keyof LeaseholdEvents>(event: E, payload: LeaseholdEvents[E]): void;
}

// Tokens are cut from a pool refilled 4 KiB at a time: one randomBytes call per acquisition
// showed up in profiles at several thousand acquisitions a second. Every token is still
// 128 fresh bits from the OS's CSPRNG, never reused.
const TOKEN_BYTES = 16;
let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh 128-bit owner token from the OS's CSPRNG. */
export function newToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * 256);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}

/** All keys of one primitive share the hash tag `{name}`, so its scripts run on Redis Cluster. */
export const keyFor = (prefix: string, name: string, suffix = ''): string =>
  `${prefix}:{${name}}${suffix === '' ? '' : `:${suffix}`}`;
