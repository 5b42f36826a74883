export { CHANNELS } from './diagnostics.ts';
export {
  ConnectError,
  ConnectionClosedError,
  DurabilityError,
  ERROR_CODES,
  IdempotencyConflictError,
  LeaseholdError,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
  type LossReason,
  NotificationsError,
  OutcomeUnknownError,
  QuorumError,
  RedisCommandError,
  RedisUnavailableError,
  ScriptingUnavailableError,
} from './errors.ts';
export type { LeaseholdEvents } from './events.ts';
export type { Primitive } from './inspect/key-names.ts';
export { Lease } from './lease.ts';
export { Leasehold } from './leasehold.ts';
export { MemoryBackend } from './memory/index.ts';
export type {
  AcquireOptions,
  ConnectOptions,
  InspectOptions,
  ListOptions,
  MultiLockOptions,
  OnceOptions,
  SemaphoreAcquireOptions,
  SemaphoreOptions,
  TlsOptions,
} from './options/index.ts';
export type { Election, Leader, LeadershipChange, LeadOptions, Term } from './primitives/election.ts';
export type { FairLock } from './primitives/fair.ts';
export type { IdempotentOptions } from './primitives/idempotent.ts';
export type { Holder, Inspection, NodeInspection, Waiter } from './primitives/inspection.ts';
export { MultiLease, type MultiLock } from './primitives/multi-lock.ts';
export type { ReadWriteLock } from './primitives/rwlock.ts';
export type { Semaphore } from './primitives/semaphore.ts';
export type { LeaseWork } from './primitives/with-lease.ts';
