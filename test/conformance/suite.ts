// What the primitives' conformance suites share (primitives.conformance.ts builds it).
import type { Leasehold } from '../../src/index.ts';

/** What each primitive's suite gets: fresh instances on the target, and raw access to its store. */
export interface Suite {
  /** One instance per ttl given, sharing a fresh prefix; closed after the suite. */
  instances(...ttls: number[]): Promise<{ prefix: string; lhs: Leasehold[] }>;
  /** A command sent to the store behind the library's back. */
  command(args: (string | number)[]): Promise<unknown>;
  /** The store's own clock (TIME) in ms: what scores of permits, readers and waiters use. */
  serverMs(): Promise<number>;
}

/** A key of primitive `name`, as the library lays it out: `<prefix>:{<name>}:<suffix>`. */
export const keyOf = (prefix: string, name: string, suffix: string): string =>
  `${prefix}:{${name}}:${suffix}`;

/** Whether waiters of `lh` are woken by pushes (otherwise they poll every `retryDelay`). */
export const pushes = (lh: Leasehold): boolean => lh.notifications === 'tracking';

/** Timers of this process: a close() must not leave any behind. */
export const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
