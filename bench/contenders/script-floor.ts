// The uncontended floor under leasehold: its own two scripts (acquire.lua, release.lua), with the
// same keys and the same kind of stored value, sent through the same client library set up as
// leasehold sets it up, and nothing else: no wait queue, no lease object, no renewal, no loss
// detection (no tracking, no signal), no command watchdog. The uncontended scenario runs it beside
// leasehold on that client; what leasehold's pair costs above it is leasehold's own JavaScript.
import type { RedisClientType } from 'redis';
import { stamp } from '../../src/base/owner.ts';
import { evalArgs, isNoScript, type ScriptCall } from '../../src/driver/types.ts';
import { acquireCall, mutexKeys, releaseCall } from '../../src/primitives/mutex.ts';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, packageVersion } from './util.ts';

type Driver = 'node-redis' | 'ioredis';

/** A floor's id is this and its driver; `floorOf` names the leasehold contender it stands under. */
export const FLOOR_PREFIX = 'floor-scripts-';
export const floorOf = (floorId: string): string => floorId.replace(FLOOR_PREFIX, 'leasehold-');

/** Never aborts: the floor detects no loss. */
const NEVER = new AbortController().signal;
/** leasehold's default prefix and a default owner's length (host:pid:title). */
const PREFIX = 'leasehold';
const OWNER = 'bench-host:12345:node';

/** Sends one command, as leasehold's driver does on that client (sendCommand / call). */
type Send = (args: string[]) => Promise<unknown>;

async function connect(driver: Driver, url: string): Promise<{ send: Send; close(): Promise<void> }> {
  if (driver === 'ioredis') {
    const client = await ioredisClient(url);
    return { send: ([name, ...rest]) => client.call(name!, ...rest), close: async () => client.disconnect() };
  }
  const { createClient } = await import('redis');
  // leasehold's command connection: RESP3, no offline queue, no per-command timer (src/driver/node-redis.ts).
  const client = createClient({
    url,
    RESP: 3,
    disableOfflineQueue: true,
    commandOptions: { timeout: 0 },
  }) as unknown as RedisClientType;
  await client.connect();
  return { send: (args) => client.sendCommand(args), close: () => client.close() };
}

/** EVALSHA, loading the script on NOSCRIPT, as leasehold's drivers do. */
async function evalScript(send: Send, call: ScriptCall): Promise<unknown> {
  try {
    return await send(evalArgs(call, true));
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return send(evalArgs(call, false));
  }
}

export function scriptFloor(driver: Driver): Contender {
  const id = `${FLOOR_PREFIX}${driver}`;
  return {
    id,
    scenarios: ['uncontended'],
    async info(): Promise<ContenderInfo> {
      const client = driver === 'node-redis' ? 'redis' : 'ioredis';
      return {
        id,
        label: `leasehold's scripts on bare ${driver}`,
        library: 'none (bench/contenders/script-floor.ts)',
        version: '–',
        client,
        clientVersion: packageVersion(client),
        api: 'EVALSHA acquire.lua (lock, fence, fence mark); EVALSHA release.lua (lock, fence, waiters, grants, fence mark)',
        lossSignal: 'none',
        waiting: 'none: retries a busy lock after its PTTL',
        settings: { driver, prefix: PREFIX },
      };
    },
    async connect(url: string): Promise<ContenderClient> {
      const { send, close } = await connect(driver, url);
      return {
        async acquire(name, { ttl }) {
          const keys = mutexKeys(PREFIX, name);
          const stored = stamp(OWNER);
          for (;;) {
            const reply = (await evalScript(send, acquireCall(keys, stored, ttl))) as unknown[];
            // {1, fence, ...} granted; {0, pttl} busy (scripts/acquire.lua).
            if (Number(reply[0]) === 1) break;
            await new Promise((resolve) => setTimeout(resolve, Math.max(1, Number(reply[1]))));
          }
          return {
            signal: NEVER,
            release: async () => {
              await evalScript(send, releaseCall(keys, stored));
            },
          };
        },
        close,
      };
    },
  };
}

export const scriptFloors: readonly Contender[] = [scriptFloor('node-redis'), scriptFloor('ioredis')];
