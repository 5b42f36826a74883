/** Options of `lh.inspect()` and `lh.list()`, and their checks. */

import { checkKnownKeys, checkObject, fail } from './check.ts';

/** The primitives whose state can be inspected. */
export type Primitive = 'mutex' | 'semaphore' | 'rwlock' | 'fair' | 'election';

export const PRIMITIVES: readonly Primitive[] = ['mutex', 'semaphore', 'rwlock', 'fair', 'election'];

/** Options of `lh.list()`. */
export interface ListOptions {
  /**
   * Only names starting with this (lock names, without the instance's key prefix).
   * @default '' (every name)
   */
  prefix?: string;
  /** Only this primitive. @default every primitive */
  primitive?: Primitive;
  /**
   * At most this many entries (name and primitive). SCAN stops once it has found them.
   * @default 100
   */
  limit?: number;
}

/** Options of `lh.inspect()`. */
export interface InspectOptions {
  /**
   * Which primitive of the name; by default the first found in the order mutex, semaphore,
   * rwlock, fair, election.
   */
  primitive?: Primitive;
  /** At most this many holders and waiters listed per sorted set. @default 100 */
  limit?: number;
}

/** Most limit accepted: every entry is one script call. */
export const MAX_LIST_LIMIT = 10_000;

/** Validates `lh.inspect()`'s options: the primitives to look for, in order, and the limit. */
export function checkInspectOptions(options: unknown): { order: readonly Primitive[]; limit: number } {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['primitive', 'limit'], 'inspect options');
  const limit = checkLimit(o['limit'], 100);
  return { order: o['primitive'] === undefined ? PRIMITIVES : [checkPrimitive(o['primitive'])], limit };
}

/** Validates `lh.list()`'s options. */
export function checkListOptions(options: unknown): {
  prefix: string;
  primitive: Primitive | undefined;
  limit: number;
} {
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['prefix', 'primitive', 'limit'], 'list options');
  const prefix = o['prefix'] === undefined ? '' : o['prefix'];
  if (typeof prefix !== 'string') fail('prefix', 'a string', prefix);
  const primitive = o['primitive'] === undefined ? undefined : checkPrimitive(o['primitive']);
  return { prefix, primitive, limit: checkLimit(o['limit'], 100) };
}

function checkPrimitive(value: unknown): Primitive {
  if (!PRIMITIVES.includes(value as Primitive)) fail('primitive', `one of ${PRIMITIVES.join(', ')}`, value);
  return value as Primitive;
}

function checkLimit(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIST_LIMIT) {
    fail('limit', `an integer from 1 to ${MAX_LIST_LIMIT}`, value);
  }
  return value;
}
