/**
 * Every runtime failure leasehold reports is a `LeaseholdError` with a stable `code`.
 * Codes never change meaning; docs/errors.md lists each one (a test keeps the two in step).
 */
export class LeaseholdError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * The lock could not be acquired before `timeout` ran out. When Redis was unreachable at the
 * last attempt, the message says so and `cause` is the connection failure: that is not
 * contention.
 */
export class LockTimeoutError extends LeaseholdError {
  readonly lockName: string;
  constructor(lockName: string, timeout: number, unreachable?: Error) {
    super(
      'LEASEHOLD_ERR_LOCK_TIMEOUT',
      unreachable === undefined
        ? `could not acquire "${lockName}" within ${timeout} ms`
        : `could not acquire "${lockName}" within ${timeout} ms: Redis was unreachable (${unreachable.message})`,
      unreachable === undefined ? undefined : { cause: unreachable },
    );
    this.lockName = lockName;
  }
}

/** Why a lease was lost: the key changed hands or vanished, or validity ran out unconfirmed. */
export type LossReason = 'taken' | 'expired' | 'validity' | 'disconnected' | 'quorum';

/** The lease can no longer be trusted: another holder may exist. The signal's reason when lost. */
export class LockLostError extends LeaseholdError {
  readonly lockName: string;
  readonly reason: LossReason;
  constructor(lockName: string, reason: LossReason, detail: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_LOCK_LOST', `lease on "${lockName}" lost: ${detail}`, options);
    this.lockName = lockName;
    this.reason = reason;
  }
}

/** The lease was released by its holder (or by close()). The signal's reason after release. */
export class LockReleasedError extends LeaseholdError {
  readonly lockName: string;
  constructor(lockName: string, detail = 'released') {
    super('LEASEHOLD_ERR_LOCK_RELEASED', `lease on "${lockName}" ${detail}`);
    this.lockName = lockName;
  }

  /**
   * Made on every release, to be the signal's reason, and never thrown from where it is made:
   * a stack trace would say nothing, and capturing one on every release costs for nothing.
   * @internal
   */
  static quick(lockName: string, detail?: string): LockReleasedError {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new LockReleasedError(lockName, detail);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}

/** Quorum mode: a majority of nodes could not be reached or agreed. */
export class QuorumError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_QUORUM', message, options);
  }
}

/** The Leasehold instance is closed (or closing); no new work is accepted. */
export class ConnectionClosedError extends LeaseholdError {
  constructor(message = 'the Leasehold instance is closed') {
    super('LEASEHOLD_ERR_CONNECTION_CLOSED', message);
  }
}

/** Redis answered something leasehold does not understand, or refused a command it needs. */
export class RedisCommandError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_REDIS', message, options);
  }
}

/** Redis could not be reached (or did not answer) for a command that had to go through. */
export class RedisUnavailableError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_REDIS_UNAVAILABLE', message, options);
  }
}

/** Could not connect to Redis at start-up. */
export class ConnectError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_CONNECT', message, options);
  }
}

/**
 * `notifications: 'tracking'` was asked for, and connect() could not prove that invalidation
 * pushes arrive (CLIENT TRACKING refused, a proxy that drops pushes, a server with other tracking
 * rules). `cause` says what failed. With the default 'auto', leasehold polls instead.
 */
export class NotificationsError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_NOTIFICATIONS', message, options);
  }
}

/**
 * `durability` asked for WAIT after acquiring, and fewer replicas than required acknowledged
 * the write in time. The lock was released again (best effort) before this was thrown.
 */
export class DurabilityError extends LeaseholdError {
  readonly lockName: string;
  /** Replicas that acknowledged, and how many were required. */
  readonly acknowledged: number;
  readonly required: number;
  constructor(lockName: string, acknowledged: number, required: number, timeout: number) {
    super(
      'LEASEHOLD_ERR_DURABILITY',
      `"${lockName}" was acquired, but only ${acknowledged} of ${required} replicas acknowledged it ` +
        `within ${timeout} ms; released it again`,
    );
    this.lockName = lockName;
    this.acknowledged = acknowledged;
    this.required = required;
  }
}

/**
 * `lh.idempotent(key, ...)` found a run (stored, or under way) for `key` made with another
 * `fingerprint`: the same key was reused for a different request.
 */
export class IdempotencyConflictError extends LeaseholdError {
  readonly key: string;
  constructor(key: string) {
    super(
      'LEASEHOLD_ERR_IDEMPOTENCY_CONFLICT',
      `idempotency key "${key}" was used with another fingerprint (a different request under the same key)`,
    );
    this.key = key;
  }
}

/**
 * `lh.idempotent(key, ...)`: a run for `key` started and never finished (its holder crashed, or
 * lost the lock, before its result was stored): it may or may not have had its effect. Running it
 * again could do it twice, so nothing runs unless the caller asks for it (`retryUnknown: true`).
 */
export class OutcomeUnknownError extends LeaseholdError {
  readonly key: string;
  /** When the unfinished run started (epoch ms, the server's clock). */
  readonly startedAt: number;
  /** Who ran it: the owner its lease was acquired with. */
  readonly owner: string | undefined;
  /** Its lease's fencing token. */
  readonly fencingToken: bigint;
  constructor(key: string, startedAt: number, owner: string | undefined, fencingToken: bigint) {
    super(
      'LEASEHOLD_ERR_OUTCOME_UNKNOWN',
      `a run for idempotency key "${key}" started at ${new Date(startedAt).toISOString()}` +
        `${owner === undefined ? '' : ` by ${owner}`} and never finished: its outcome is unknown`,
    );
    this.key = key;
    this.startedAt = startedAt;
    this.owner = owner;
    this.fencingToken = fencingToken;
  }
}

/**
 * The server cannot run Lua scripts, and every leasehold operation is one: `EVAL`/`EVALSHA` are
 * unknown (Valkey 9.1 and later build Lua as a module an operator can leave out; a command renamed
 * away) or an ACL denies them. The message says which, and what to do (docs/compatibility.md).
 */
export class ScriptingUnavailableError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('LEASEHOLD_ERR_NO_SCRIPTING', message, options);
  }
}

/** Every code above, for docs and tests. */
export const ERROR_CODES = [
  'LEASEHOLD_ERR_LOCK_TIMEOUT',
  'LEASEHOLD_ERR_LOCK_LOST',
  'LEASEHOLD_ERR_LOCK_RELEASED',
  'LEASEHOLD_ERR_QUORUM',
  'LEASEHOLD_ERR_CONNECTION_CLOSED',
  'LEASEHOLD_ERR_REDIS',
  'LEASEHOLD_ERR_REDIS_UNAVAILABLE',
  'LEASEHOLD_ERR_CONNECT',
  'LEASEHOLD_ERR_DURABILITY',
  'LEASEHOLD_ERR_NOTIFICATIONS',
  'LEASEHOLD_ERR_IDEMPOTENCY_CONFLICT',
  'LEASEHOLD_ERR_OUTCOME_UNKNOWN',
  'LEASEHOLD_ERR_NO_SCRIPTING',
] as const;
