// The direct-grant floor of the handoff scenarios: a lock over a bare RESP3 socket whose release
// hands the lock to the first registered waiter in the same script and tells it with a PUBLISH on
// that waiter's own channel, carrying the fencing token. The waiter never asks again: the grant
// reaches it in a message on the connection it is subscribed with, one trip from Redis after the
// release. No client library and no lock library; no tracking (the floor hears of nothing but its
// grants, and of a holder's expiry through its PTTL timer). What a direct grant costs at least
// here, in the same worker processes and loop as the contenders; the report divides by it.
import { randomBytes } from 'node:crypto';
import { Connection, type Value } from './bare.ts';
import type { Contender, ContenderInfo } from './types.ts';

/** Never aborts: the floor has no extension and no loss to report. */
const NEVER = new AbortController().signal;

/** Takes the lock, or registers the waiter (member "channel token ttl") in arrival order. */
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('ZREM', KEYS[3], ARGV[3])
  return {1, redis.call('INCR', KEYS[2])}
end
redis.call('ZADD', KEYS[3], 'NX', redis.call('INCR', KEYS[2] .. ':arrivals'), ARGV[3])
return {0, redis.call('PTTL', KEYS[1])}`;

/**
 * Releases, then grants to the first waiter whose channel has a subscriber (PUBLISH counts them:
 * a waiter whose process died is skipped, not granted a lock nobody will release).
 */
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
while true do
  local first = redis.call('ZPOPMIN', KEYS[3])[1]
  if first == nil then return 1 end
  local channel, token, ttl = string.match(first, '^(%S+) (%S+) (%S+)$')
  local fence = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], token, 'PX', ttl)
  if redis.call('PUBLISH', channel, token .. ' ' .. fence) > 0 then return 2 end
  redis.call('DEL', KEYS[1])
end`;

class GrantLock {
  readonly #cmd: Connection;
  readonly #channel: string;
  /** Waiters by token: resolved by the grant message. */
  readonly #waiting = new Map<string, () => void>();

  private constructor(cmd: Connection, channel: string) {
    this.#cmd = cmd;
    this.#channel = channel;
    cmd.onPush = (value: Value[]) => {
      // RESP3 pub/sub: >3 "message" <channel> "<token> <fence>"
      if (value[0] !== 'message' || value[1] !== channel) return;
      const token = String(value[2]).split(' ')[0]!;
      const wake = this.#waiting.get(token);
      this.#waiting.delete(token);
      wake?.();
    };
  }

  static async connect(port: number): Promise<GrantLock> {
    const cmd = await Connection.open(port);
    await cmd.call(['HELLO', '3']);
    const channel = `grant:${randomBytes(8).toString('hex')}`;
    // RESP3 answers SUBSCRIBE with a push, not a reply.
    await new Promise<void>((resolve) => {
      cmd.onPush = (value) => {
        if (value[0] === 'subscribe') resolve();
      };
      cmd.write(['SUBSCRIBE', channel]);
    });
    return new GrantLock(cmd, channel);
  }

  async acquire(name: string, token: string, ttl: number): Promise<void> {
    const granted = new Promise<void>((resolve) => this.#waiting.set(token, resolve));
    const member = `${this.#channel} ${token} ${ttl}`;
    for (;;) {
      const reply = (await this.#eval(ACQUIRE, name, token, String(ttl), member)) as [number, number];
      if (reply[0] === 1) {
        this.#waiting.delete(token);
        return;
      }
      // Granted, or the holder's TTL ran out (no release, so no grant): try again then.
      const expired = await Promise.race([
        granted.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(resolve, Math.max(1, reply[1]), true).unref()),
      ]);
      if (!expired) return;
    }
  }

  async release(name: string, token: string): Promise<void> {
    await this.#eval(RELEASE, name, token);
  }

  /** Both scripts take the same keys: the lock, its fencing counter, its waiters. */
  #eval(script: string, name: string, ...args: string[]): Promise<Value> {
    const key = `floor:{${name}}`;
    return this.#cmd.call(['EVAL', script, '3', key, `${key}:fence`, `${key}:waiters`, ...args]);
  }

  close(): void {
    this.#cmd.socket.destroy();
  }
}

/** Not a contender: the handoff scenarios run it beside them and no other scenario knows it. */
export const directGrantFloor: Contender = {
  id: 'floor-direct-grant',
  async info(): Promise<ContenderInfo> {
    return {
      id: 'floor-direct-grant',
      label: 'direct-grant floor: bare sockets, release grants and publishes',
      library: 'none (bench/contenders/floor.ts)',
      version: '–',
      client: 'none',
      clientVersion: '–',
      api: 'EVAL acquire (SET NX or register) / release (DEL, ZPOPMIN, SET, PUBLISH) over a RESP3 socket',
      lossSignal: 'none',
      waiting: 'resolved by the grant message on its own channel',
      settings: {},
    };
  },
  async connect(url: string) {
    const lock = await GrantLock.connect(Number(new URL(url).port));
    return {
      async acquire(name, { ttl }) {
        const token = randomBytes(16).toString('base64url');
        await lock.acquire(name, token, ttl);
        return { signal: NEVER, release: () => lock.release(name, token) };
      },
      async close() {
        lock.close();
      },
    };
  },
};
