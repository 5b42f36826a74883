import { ExecutionError, Redlock } from '@sesamecare-oss/redlock';
import type { Contender, ContenderClient, ContenderInfo } from './types.ts';
import { ioredisClient, packageVersion, retryUntil, usingHandle } from './util.ts';

/** @sesamecare-oss/redlock on ioredis, through `using()` (auto-extension, AbortSignal on failure). */
export const redlock: Contender = {
  id: 'redlock',
  keyOf: (name) => name,
  async info(): Promise<ContenderInfo> {
    // One throwaway instance to read the effective defaults back; it never connects.
    const settings = new Redlock([{} as never]).settings;
    return {
      id: 'redlock',
      label: '@sesamecare-oss/redlock',
      library: '@sesamecare-oss/redlock',
      version: packageVersion('@sesamecare-oss/redlock'),
      client: 'ioredis',
      clientVersion: packageVersion('ioredis'),
      api: 'new Redlock([client]); redlock.using([name], ttl, routine)',
      lossSignal: 'the AbortSignal using() passes to the routine (aborts when auto-extension fails)',
      waiting:
        'using() retries retryCount times every retryDelay ± retryJitter ms; on ExecutionError it is called again',
      settings: { ...settings },
    };
  },
  async connect(url: string): Promise<ContenderClient> {
    const client = await ioredisClient(url);
    const lock = new Redlock([client]);
    return {
      acquire: (name, { ttl, signal }) =>
        retryUntil(
          () => usingHandle((routine) => lock.using([name], ttl, routine)),
          (error) => error instanceof ExecutionError,
          signal,
        ),
      async close() {
        await client.quit();
      },
    };
  },
};
