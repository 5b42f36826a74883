import { loadIoredis } from './load-ioredis.ts';
import { Resubscribe } from './resubscribe.ts';
import type { DriverKind } from './types.ts';

/** A pub/sub subscription that reconnects by itself; `ready` runs after every (re)subscribe. */
export type Subscribe = (
  url: string,
  channel: string,
  handlers: { message(text: string): void; ready(): void },
) => { close(): Promise<void> };

/** Nothing to do when a sentinel's SUBSCRIBE fails: Resubscribe sends it again. */
const ignore = (): void => {};

/**
 * node-redis: a plain RESP2 connection in subscribe mode, subscribed at every 'ready'
 * (Resubscribe: a first SUBSCRIBE that failed is sent again).
 */
export const nodeRedisSubscribe: Subscribe = (url, channel, handlers) => {
  let keep: Resubscribe | undefined;
  const opened = import('redis').then(async ({ createClient }) => {
    const client = createClient({ url });
    const listener = (message: string) => handlers.message(String(message));
    keep = new Resubscribe(
      () => client.subscribe(channel, listener),
      { up: () => handlers.ready(), down: ignore },
      () => client.isReady,
    );
    client.on('error', () => {}); // reconnects by itself; the driver's own connection reports drops
    client.on('ready', () => keep?.ready());
    await client.connect();
    return client;
  });
  opened.catch(() => {});
  return {
    close: async () => {
      // Before the wait (no SUBSCRIBE from a 'ready' meanwhile) and after it (made while opening).
      keep?.close();
      const client = await opened.catch(() => undefined);
      keep?.close();
      client?.destroy();
    },
  };
};

/**
 * ioredis (or iovalkey, its fork): a RESP2 subscriber subscribed at every 'ready' (Resubscribe;
 * not its own autoResubscribe, whose SUBSCRIBE nobody catches).
 */
export const ioredisSubscribe =
  (pkg: 'ioredis' | 'iovalkey'): Subscribe =>
  (url, channel, handlers) => {
    let keep: Resubscribe | undefined;
    const opened = loadIoredis(pkg).then(async (Redis) => {
      const client = new Redis(url, { lazyConnect: true, protocol: 2, autoResubscribe: false });
      keep = new Resubscribe(
        () => client.subscribe(channel),
        { up: () => handlers.ready(), down: ignore },
        () => client.status === 'ready',
      );
      client.on('error', () => {});
      client.on('ready', () => keep?.ready());
      client.on('message', (from: string, message: string) => {
        if (from === channel) handlers.message(message);
      });
      await client.connect();
      return client;
    });
    opened.catch(() => {});
    return {
      close: async () => {
        // Before the wait and after it, as nodeRedisSubscribe's close().
        keep?.close();
        const client = await opened.catch(() => undefined);
        keep?.close();
        client?.disconnect();
      },
    };
  };

/** The subscription a Sentinel driver follows its sentinels with, for the client kind. */
export function subscriberFor(kind: DriverKind): Subscribe {
  if (kind === 'node-redis') return nodeRedisSubscribe;
  // Leasehold.connect() and the CLI refuse Sentinel with GLIDE before any driver is made.
  if (kind === 'glide') throw new TypeError('Sentinel is not supported with Valkey GLIDE');
  return ioredisSubscribe(kind);
}
