import type { Driver } from '../driver/types.ts';
import { parseStamp } from '../engine/owner.ts';
import { RedisCommandError } from '../errors.ts';
import { loadScript } from '../scripts/index.ts';
import { keysOf, type Primitive } from './layout.ts';
import type { Holder, Inspection, Waiter } from './types.ts';

const script = loadScript('inspect');

/** One node's view of one primitive of one name; undefined when none of its keys exist. */
export async function readOne(
  driver: Driver,
  prefix: string,
  name: string,
  primitive: Primitive,
  max: number,
): Promise<Inspection | undefined> {
  const reply = await driver.eval({
    script,
    keys: keysOf(prefix, name, primitive),
    args: [primitive, String(max)],
  });
  if (!Array.isArray(reply)) throw new RedisCommandError(`unexpected reply from the inspect script`);
  return parse(name, primitive, reply);
}

const text = (v: unknown): string | undefined =>
  v === null || v === undefined || v === false
    ? undefined
    : v instanceof Uint8Array
      ? Buffer.from(v).toString()
      : String(v);
const num = (v: unknown): number => Number(text(v) ?? Number.NaN);
const fence = (v: unknown): bigint => BigInt(text(v) ?? '0');
const pairs = (v: unknown): [string, number][] => {
  const flat = Array.isArray(v) ? v : [];
  const out: [string, number][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([text(flat[i]) ?? '', num(flat[i + 1])]);
  return out;
};

function holder(value: string, ttlLeft: number, fencingToken: bigint | undefined): Holder {
  const { token, owner, since } = parseStamp(value);
  return { owner, since, ttlLeft, fencingToken, token };
}

function waiter(value: string, deadline: number, now: number): Waiter {
  const { token, owner, since } = parseStamp(value);
  return { owner, since, token, deadlineIn: Math.max(0, deadline - now) };
}

function parse(name: string, primitive: Primitive, r: unknown[]): Inspection | undefined {
  const now = num(r[0]);
  switch (primitive) {
    case 'mutex': {
      const value = text(r[1]);
      if (value === undefined && text(r[3]) === undefined) return undefined;
      const last = fence(r[3]);
      const holders = value === undefined ? [] : [holder(value, num(r[2]), last)];
      return { name, primitive, holders, waiters: undefined, lastFencingToken: last };
    }
    case 'semaphore': {
      const members = pairs(r[3]);
      if (text(r[1]) === undefined && members.length === 0) return undefined;
      // Members are `<value>:<i>`, one per permit: one holder per value.
      const byValue = new Map<string, Holder>();
      for (const [member, expiry] of members) {
        const value = member.slice(0, member.lastIndexOf(':'));
        const known = byValue.get(value);
        if (known !== undefined) known.permits = (known.permits ?? 1) + 1;
        else byValue.set(value, { ...holder(value, expiry - now, undefined), permits: 1 });
      }
      return {
        name,
        primitive,
        holders: [...byValue.values()],
        waiters: undefined,
        lastFencingToken: fence(r[1]),
        permitsInUse: num(r[2]),
      };
    }
    case 'rwlock': {
      const writer = text(r[2]);
      const readers = pairs(r[4]);
      const waiting = pairs(r[5]);
      if (text(r[1]) === undefined && writer === undefined && readers.length + waiting.length === 0)
        return undefined;
      const last = fence(r[1]);
      const holders: Holder[] = [];
      if (writer !== undefined) holders.push({ ...holder(writer, num(r[3]), last), role: 'writer' });
      for (const [value, expiry] of readers)
        holders.push({ ...holder(value, expiry - now, undefined), role: 'reader' });
      const waiters = waiting.map(
        ([value, deadline]): Waiter => ({ ...waiter(value, deadline, now), role: 'writer' }),
      );
      return { name, primitive, holders, waiters, lastFencingToken: last };
    }
    case 'fair': {
      const value = text(r[2]);
      const queue = pairs(r[5]);
      if (text(r[1]) === undefined && value === undefined && queue.length === 0) return undefined;
      const last = fence(r[1]);
      return {
        name,
        primitive,
        holders: value === undefined ? [] : [holder(value, num(r[3]), last)],
        waiters: queue.map(([v, deadline]) => waiter(v, deadline, now)),
        lastFencingToken: last,
        queued: num(r[4]),
      };
    }
    case 'election': {
      const token = text(r[2]);
      if (text(r[1]) === undefined && token === undefined) return undefined;
      const holders: Holder[] = [];
      if (token !== undefined) {
        holders.push({ ...holder(token, num(r[5]), fence(r[4])), value: text(r[3]) ?? '' });
      }
      return { name, primitive, holders, waiters: undefined, lastFencingToken: fence(r[1]) };
    }
  }
}
