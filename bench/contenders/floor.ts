import { randomBytes } from 'node:crypto';
import { BareLock } from '../stages/bare.ts';
import { GrantLock } from '../stages/bare-grant.ts';
import type { Contender, ContenderInfo } from './types.ts';

/** Never aborts: the floor has no extension and no loss to report. */
const NEVER = new AbortController().signal;

/**
 * The handoff scenario's wake-all floor, run in the same worker processes and the same loop
 * as the contenders: leasehold's own acquire.lua and release.lua over bare RESP3 sockets with
 * CLIENT TRACKING ON (bench/stages/bare.ts), no client library and no lock library. A waiter
 * retries inside the callback that read the push; every waiting process retries on every
 * release, as leasehold's do, so the herd is in the floor. Not a contender: the handoff scenario
 * runs it beside them and the report divides by it; no other scenario knows it.
 */
export const crossProcessFloor: Contender = {
  id: 'floor-bare-push',
  async info(): Promise<ContenderInfo> {
    return {
      id: 'floor-bare-push',
      label: 'wake-all floor: bare sockets, leasehold’s scripts, every waiter retries',
      library: 'none (bench/stages/bare.ts)',
      version: '–',
      client: 'none',
      clientVersion: '–',
      api: 'EVALSHA acquire.lua / release.lua over a RESP3 socket with CLIENT TRACKING ON',
      lossSignal: 'none',
      waiting: 'retries in the callback that read the invalidation push',
      settings: {},
    };
  },
  async connect(url: string) {
    const lock = await BareLock.connect(Number(new URL(url).port), 'push');
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

/**
 * The direct-grant floor (bench/stages/bare-grant.ts): the release script hands the lock to the
 * first registered waiter and PUBLISHes the grant on that waiter's channel; the waiter holds the
 * lock when the message arrives, with no further round trip. One trip to Redis and one back:
 * what a lock that grants in its release pays here at least, before any client library.
 */
export const directGrantFloor: Contender = {
  id: 'floor-direct-grant',
  async info(): Promise<ContenderInfo> {
    return {
      id: 'floor-direct-grant',
      label: 'direct-grant floor: bare sockets, release grants and publishes',
      library: 'none (bench/stages/bare-grant.ts)',
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
