import { loadIoredis } from './load-ioredis.ts';
import type { DriverKind } from './types.ts';

/** A pub/sub subscription that reconnects by itself; `ready` runs after every (re)subscribe. */
export type Subscribe = (
  url: string,
  channel: string,
  handlers: { message(text: string): void; ready(): void },
) => { close(): Promise<void> };

/** node-redis: a plain RESP2 connection in subscribe mode (node-redis resubscribes on reconnect). */
export const nodeRedisSubscribe: Subscribe = (url, channel, handlers) => {
  const opened = import('redis').then(async ({ createClient }) => {
    const client = createClient({ url });
    client.on('error', () => {}); // reconnects by itself; the driver's own connection reports drops
    client.on('ready', () => handlers.ready());
    await client.connect();
    await client.subscribe(channel, (message) => handlers.message(String(message)));
    return client;
  });
  opened.catch(() => {});
  return {
    close: async () => {
      const client = await opened.catch(() => undefined);
      client?.destroy();
    },
  };
};

/** ioredis (or iovalkey, its fork): a RESP2 subscriber (it resubscribes on reconnect). */
export const ioredisSubscribe =
  (pkg: 'ioredis' | 'iovalkey'): Subscribe =>
  (url, channel, handlers) => {
    const opened = loadIoredis(pkg).then(async (Redis) => {
      const client = new Redis(url, { lazyConnect: true, protocol: 2 });
      client.on('error', () => {});
      client.on('ready', () => handlers.ready());
      client.on('message', (from: string, message: string) => {
        if (from === channel) handlers.message(message);
      });
      await client.connect();
      await client.subscribe(channel);
      return client;
    });
    opened.catch(() => {});
    return {
      close: async () => {
        const client = await opened.catch(() => undefined);
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
