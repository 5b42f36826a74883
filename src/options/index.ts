/**
 * Every option leasehold takes, with its documentation and its check. Bad input throws a
 * TypeError that names the option and the value received, before any network traffic.
 */

export {
  type AcquireOptions,
  checkAcquireOptions,
  checkOnceOptions,
  type OnceOptions,
  type ValidAcquireOptions,
} from './acquire.ts';
export {
  CONTROL_CHARACTERS,
  checkDuration,
  checkKnownKeys,
  checkName,
  checkObject,
  checkOwner,
  checkSignal,
  checkTimeout,
  checkTtl,
  checkWellFormed,
  describe,
  fail,
  MAX_NAME_LENGTH,
  MAX_OWNER_LENGTH,
  MAX_TTL,
} from './check.ts';
export {
  type ConnectOptions,
  checkConnectOptions,
  type LowLatency,
  type ValidConnectOptions,
} from './connect.ts';
export {
  checkInspectOptions,
  checkListOptions,
  type InspectOptions,
  type ListOptions,
  MAX_LIST_LIMIT,
} from './inspect.ts';
export {
  checkElectionValue,
  checkMultiLock,
  checkPermits,
  checkSemaphoreOptions,
  MAX_NAMES,
  type MultiLockOptions,
  type SemaphoreAcquireOptions,
  type SemaphoreOptions,
} from './primitives.ts';
export {
  checkDriver,
  checkPrefix,
  checkUrl,
  DEFAULT_PREFIX,
  type DriverKind,
  defaultUrl,
  installedDriver,
} from './redis.ts';
export { checkTls, type Pem, type TlsOptions } from './tls.ts';
export type {
  ClusterOptions,
  DurabilityOptions,
  SentinelOptions,
  ValidTopology,
} from './topology.ts';
