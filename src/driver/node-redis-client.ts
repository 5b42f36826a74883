import type { RedisClientType } from 'redis';
import { isDefinitive } from './connect-errors.ts';

// node-redis's generic client type is a large union; the driver only uses these members.
export type Client = Pick<
  RedisClientType,
  'sendCommand' | 'connect' | 'close' | 'destroy' | 'on' | 'off' | 'isReady' | 'isOpen'
> & {
  duplicate(options?: object): Client;
  options?: Record<string, unknown>;
};

/**
 * `client.connect()`, failing at once with the cause when the error cannot go away by retrying
 * (refused, unresolvable, AUTH / ACL / database index rejected): node-redis would otherwise
 * retry in the background until connect() timed out with "no answer", hiding why.
 */
export async function connectClient(client: Client): Promise<void> {
  let listener: ((error: unknown) => void) | undefined;
  const definitive = new Promise<never>((_, reject) => {
    listener = (error) => {
      if (isDefinitive(error)) reject(error);
    };
    client.on('error', listener);
  });
  definitive.catch(() => {});
  try {
    await Promise.race([client.connect(), definitive]);
  } catch (error) {
    client.destroy();
    throw error;
  } finally {
    client.off('error', listener!);
  }
}

/**
 * Reconnect delays for leasehold's own connections: the first retry at once, then 50, 100, 200
 * ... ms up to 2 s, without node-redis's default random 0-200 ms. A holder on
 * `onDisconnect: 'reverify'` trusts its lease until it re-verifies after the reconnect, and a
 * waiter elsewhere may take a lock that a restarted, empty server lost in the meantime: that
 * window is exactly as long as this delay, so it must not be a random one.
 */
export function reconnectDelay(retries: number): number {
  return retries === 0 ? 0 : Math.min(50 * 2 ** (retries - 1), 2_000);
}

/**
 * Where node-redis delivers a connection's invalidation pushes: its client-side-cache hook,
 * with the caching left unused (leasehold sends raw commands, which bypass the cache). Not
 * `emitInvalidate`: that option puts CLIENT TRACKING ON into the connection handshake, and a
 * server that refuses it (an ACL without client|tracking) then fails every (re)connect, so
 * leasehold could not even fall back to polling. The handshake here runs a PING instead, and
 * the driver arms tracking itself after every (re)connect, where a refusal is just a failed proof.
 */
export function pushReceiver(
  redis: typeof import('redis'),
  deliver: (keys: string[] | null) => void,
): object {
  return new (class extends redis.BasicClientSideCache {
    override trackingOn(): string[] {
      return ['PING'];
    }
    override invalidate(key: unknown): void {
      deliver(key === null ? null : [String(key)]);
    }
  })();
}
