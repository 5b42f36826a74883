import { RedisCommandError } from '../errors.ts';

/** A script's integer or string reply as a number. */
export function toNumber(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number(value);
  if (value instanceof Uint8Array) return Number(Buffer.from(value).toString());
  throw new RedisCommandError(`unexpected reply from Redis: ${JSON.stringify(value)}`);
}

/** A fencing token: an integer reply (most scripts) or a string (a hash field, the election log). */
export function toFence(value: unknown): bigint {
  if (typeof value === 'string' || typeof value === 'number') return BigInt(value);
  if (value instanceof Uint8Array) return BigInt(Buffer.from(value).toString());
  throw new RedisCommandError(`unexpected fencing token from Redis: ${JSON.stringify(value)}`);
}

/** A script's `{ok, value}` reply. */
export function pair(reply: unknown, script: string): [number, unknown] {
  if (!Array.isArray(reply) || reply.length < 2) {
    throw new RedisCommandError(`unexpected reply from the ${script} script: ${JSON.stringify(reply)}`);
  }
  return [toNumber(reply[0]), reply[1]];
}

/** A reply as text: a bulk string may arrive as a Buffer (RESP3 on some clients) or a string. */
export function toText(value: unknown): string {
  return value instanceof Uint8Array ? Buffer.from(value).toString() : String(value ?? '');
}

/** A reply as text, or undefined for a missing value (nil, which Lua returns as false). */
export function optionalText(value: unknown): string | undefined {
  return value === null || value === undefined || value === false ? undefined : toText(value);
}
