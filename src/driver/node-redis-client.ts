import type { RedisClientType } from 'redis';
import { within } from '../base/timeouts.ts';
import { CANARY_TIMEOUT } from './canary.ts';
import { isDefinitive } from './connect-errors.ts';
import { Resubscribe } from './resubscribe.ts';
import type { Subscription, SubscriptionHandlers } from './types.ts';

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

/**
 * `sub`, a RESP2 copy of the command connection's settings (TLS, credentials), subscribed to
 * `channel` at every 'ready' (Resubscribe): node-redis re-subscribes only channels whose SUBSCRIBE
 * succeeded, and for those ours costs no command. Kept in `subs` until closed, so that the
 * driver's close() destroys it.
 */
export function subscribeOn(
  sub: Client,
  channel: string,
  handlers: SubscriptionHandlers,
  subs: Set<Client>,
): Subscription {
  const client = sub as Client & {
    subscribe(channel: string, listener: (message: string) => void): Promise<void>;
  };
  subs.add(sub);
  // One listener for every SUBSCRIBE: node-redis keeps a channel's listeners in a Set.
  const listener = (message: string) => handlers.message(String(message));
  const keep = new Resubscribe(
    () => client.subscribe(channel, listener),
    handlers,
    () => sub.isReady,
  );
  sub.on('error', () => handlers.down());
  sub.on('end', () => handlers.down());
  sub.on('ready', () => keep.ready());
  connectClient(sub).catch(() => handlers.down());
  return {
    close: async () => {
      keep.close();
      // At once, not after the subscribe: a stalled server would hold close() up forever.
      subs.delete(sub);
      try {
        sub.destroy();
      } catch {
        // not open yet: nothing to end
      }
    },
  };
}

/** A node-redis client set up for client-side caching of its own (RESP3 tracking on it). */
export function cachesClientSide(client: Client): boolean {
  const options = client.options ?? {};
  return options['clientSideCache'] !== undefined || options['emitInvalidate'] === true;
}

/** DEL of each of `keys` on `client`. */
export const deleteKeys = (client: Client, keys: readonly string[]): Promise<unknown[]> =>
  Promise.all(keys.map((key) => client.sendCommand(['DEL', key])));

/**
 * `keys` deleted from a connection of its own (a copy of `template` with `socket`), opened for
 * this once: one attempt, bounded, so that a poke that cannot connect fails the canary's proof
 * instead of retrying forever. Kept in `pokers` while open, for the driver's close().
 */
export async function pokeOnce(
  template: Client,
  socket: object,
  keys: readonly string[],
  pokers: Set<Client>,
): Promise<void> {
  const poker = template.duplicate({
    clientSideCache: undefined,
    socket: { ...socket, reconnectStrategy: false, connectTimeout: CANARY_TIMEOUT },
  });
  poker.on('error', () => {});
  pokers.add(poker);
  try {
    await within(poker.connect(), CANARY_TIMEOUT);
    await within(deleteKeys(poker, keys), CANARY_TIMEOUT);
  } finally {
    pokers.delete(poker);
    poker.destroy();
  }
}
