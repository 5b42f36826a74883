// What the primitives' conformance suites share (primitives.conformance.ts builds it).
import { after, afterEach, before } from 'node:test';
import type { ConnectOptions, Leasehold } from '../../src/index.ts';
import type { Primitive } from '../../src/options/inspect.ts';
import { REGISTRY } from '../../src/primitives/registry.ts';
import { uniquePrefix } from '../harness/leasehold.ts';

/** What each primitive's suite gets: fresh instances on the target, and raw access to its store. */
export interface Suite {
  /** One instance per ttl given, sharing a fresh prefix; closed after the suite. */
  instances(...ttls: number[]): Promise<{ prefix: string; lhs: Leasehold[] }>;
  /** A command sent to the store behind the library's back. */
  command(args: (string | number)[]): Promise<unknown>;
  /** The store's own clock (TIME) in ms: what scores of permits, readers and waiters use. */
  serverMs(): Promise<number>;
}

/** The key of `role` of primitive `primitive` of `name`, from the primitive's own layout. */
export const keyOf = <P extends Primitive>(
  prefix: string,
  name: string,
  primitive: P,
  role: string,
): string => {
  const key = REGISTRY[primitive].layout.keys(prefix, name)[role];
  if (key === undefined) throw new Error(`the ${primitive} has no key "${role}"`);
  return key;
};

/** Whether waiters of `lh` are woken by pushes (otherwise they poll every `retryDelay`). */
export const pushes = (lh: Leasehold): boolean => lh.notifications === 'tracking';

/** Timers of this process: a close() must not leave any behind. */
export const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** What a pool needs of its target: instances, and its own teardown. */
interface PoolTarget {
  connect(options: ConnectOptions): Promise<Leasehold>;
  close(): Promise<void>;
}

/**
 * The one instance pool every conformance suite uses: its target started in `before`, instances
 * on a fresh prefix per call, closed when their test ends, and the target closed in `after`.
 * Call inside a `describe`.
 */
export function usePool<T extends PoolTarget>(
  label: string,
  start: () => Promise<T>,
): {
  /** The running target (inside tests). */
  target(): T;
  /** One instance per ttl given, sharing a fresh prefix. */
  instances(...ttls: number[]): Promise<{ prefix: string; lhs: Leasehold[] }>;
  /** `n` instances with one ttl, sharing a fresh prefix. */
  many(n: number, ttl?: number): Promise<{ prefix: string; lhs: Leasehold[] }>;
} {
  let target: T | undefined;
  const open: Leasehold[] = [];
  before(async () => {
    target = await start();
  });
  // Each test's instances close when it ends: a PostgreSQL target (a listener and a pool per
  // instance) would otherwise hold 90 of the server's 100 default connections by the end of a suite.
  afterEach(async () => {
    await Promise.all(open.splice(0).map((lh) => lh.close()));
  });
  after(async () => {
    await Promise.all(open.map((lh) => lh.close()));
    await target?.close();
  });
  const running = (): T => {
    if (target === undefined) throw new Error('the target starts in before()');
    return target;
  };
  const instances = async (...ttls: number[]) => {
    const prefix = uniquePrefix(label);
    const lhs = await Promise.all(ttls.map((ttl) => running().connect({ prefix, ttl })));
    open.push(...lhs);
    return { prefix, lhs };
  };
  return {
    target: running,
    instances,
    many: (n, ttl = 1_000) => instances(...Array.from({ length: n }, () => ttl)),
  };
}
