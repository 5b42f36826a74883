import { once } from 'node:events';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { within } from '../base/timeouts.ts';
import { CANARY_TIMEOUT } from './canary.ts';
import { Resubscribe } from './resubscribe.ts';
import type { Subscription, SubscriptionHandlers } from './types.ts';

/**
 * Connects `client` (or waits for a connect under way), failing with the error the client
 * reported (ECONNREFUSED, ENOTFOUND, WRONGPASS...) rather than ioredis's "Connection is closed.",
 * which says nothing about why.
 */
export async function connectClient(client: Redis): Promise<void> {
  if (client.status === 'ready') return;
  let reported: unknown;
  const onError = (error: unknown) => {
    reported ??= error;
  };
  client.on('error', onError);
  try {
    if (client.status === 'wait') await client.connect();
    else await once(client, 'ready');
  } catch (error) {
    throw reported ?? error;
  } finally {
    client.off('error', onError);
  }
}

/** Drops a connection that stopped answering; ioredis then reconnects by its retryStrategy. */
export function dropSocket(client: Redis): void {
  const stream = client.stream as Socket | undefined;
  // A reset, not a FIN: the kernel must not keep delivering our unanswered commands to a
  // server that comes back later (they would run after the give-backs sent on the new connection).
  if (typeof stream?.resetAndDestroy === 'function') stream.resetAndDestroy();
  else stream?.destroy();
}

/**
 * `sub`, a RESP2 connection of our own (made with autoResubscribe off), subscribed to `channel`
 * at every 'ready' (Resubscribe). Kept in `subs` until closed, so that the driver's close() ends it.
 */
export function subscribeOn(
  sub: Redis,
  channel: string,
  handlers: SubscriptionHandlers,
  subs: Set<Redis>,
): Subscription {
  subs.add(sub);
  // Not ioredis's autoResubscribe: that one's SUBSCRIBE is not caught, and with the offline queue
  // off it rejects when the connection drops again before it is written, an unhandled rejection
  // that ends a user's process (a restarted Valkey 8.1 in restart-empty.test.ts). A message
  // published before the SUBSCRIBE counts no receiver and is not sent (the waiter hears of the
  // lock through its push instead).
  const keep = new Resubscribe(
    () => sub.subscribe(channel),
    handlers,
    () => sub.status === 'ready',
  );
  sub.on('error', () => {});
  sub.on('close', () => handlers.down());
  sub.on('message', (from: string, message: string) => {
    if (from === channel) handlers.message(message);
  });
  sub.on('ready', () => keep.ready());
  sub.connect().catch(() => handlers.down());
  return {
    close: async () => {
      keep.close();
      // At once, not after the subscribe: a stalled server would hold close() up forever.
      subs.delete(sub);
      sub.disconnect();
    },
  };
}

/**
 * `keys` deleted from a connection of its own (a copy of `template`), opened for this once: one
 * attempt, bounded, so that a poke that cannot connect fails the canary's proof instead of
 * retrying forever. Kept in `pokers` while open, for the driver's close().
 */
export async function pokeOnce(template: Redis, keys: readonly string[], pokers: Set<Redis>): Promise<void> {
  const poker = template.duplicate({
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    connectTimeout: CANARY_TIMEOUT,
  });
  poker.on('error', () => {});
  pokers.add(poker);
  try {
    await within(poker.connect(), CANARY_TIMEOUT);
    await within(Promise.all(keys.map((key) => poker.del(key))), CANARY_TIMEOUT);
  } finally {
    pokers.delete(poker);
    poker.disconnect();
  }
}
