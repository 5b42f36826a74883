import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Cluster, Redis } from 'ioredis';

const require = createRequire(import.meta.url);
type PackageJson = { name?: string; version?: string };

/** Version of an installed package, read from its package.json (walks up from its entry point). */
export function packageVersion(name: string): string {
  let dir: string;
  try {
    dir = dirname(require.resolve(name));
  } catch {
    return 'unknown';
  }
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
      if (pkg.name === name && pkg.version !== undefined) return pkg.version;
    } catch {
      // not at the package root yet
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

/** Version in this repository's package.json. */
export function ownVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as PackageJson).version ?? 'unknown';
}

/**
 * An ioredis connection, resolved once it is ready (so setup is not measured). `pipelined`: with
 * enableAutoPipelining, as a throughput-minded user configures it (the tuned contenders).
 */
export async function ioredisClient(url: string, pipelined = false): Promise<Redis> {
  const client = pipelined ? new Redis(url, { enableAutoPipelining: true }) : new Redis(url);
  if (client.status !== 'ready') await once(client, 'ready');
  return client;
}

/**
 * An ioredis Cluster client over `rootNodes` (redis://host:port URLs), resolved once ready; the
 * same `pipelined` setting as ioredisClient. The peers take it where they take a Redis client.
 */
export async function ioredisCluster(rootNodes: readonly string[], pipelined = false): Promise<Cluster> {
  const nodes = rootNodes.map((url) => {
    const { hostname, port } = new URL(url);
    return { host: hostname, port: Number(port) };
  });
  const client = new Cluster(nodes, pipelined ? { enableAutoPipelining: true } : {});
  if (client.status !== 'ready') {
    const ready = once(client, 'ready', { signal: AbortSignal.timeout(10_000) });
    await ready.catch((error: unknown) => {
      client.disconnect();
      throw new Error(`ioredis Cluster not ready within 10 s (${String(error)})`);
    });
  }
  return client;
}

/**
 * Calls `attempt` until it yields, retrying only on `retryable` errors (the library's "gave up"):
 * how a caller waits with a library whose acquire gives up after its own retry budget.
 */
export async function retryUntil<T>(
  attempt: () => Promise<T>,
  retryable: abstract new (...args: never[]) => Error,
  signal: AbortSignal | undefined,
): Promise<T> {
  for (;;) {
    signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof retryable)) throw error;
    }
  }
}

/**
 * Turns a callback-style `using(routine)` into a handle: resolves once the routine runs (the lock is
 * held) with the routine's signal; `release()` ends the routine and waits for the library's release.
 */
export function usingHandle(
  using: (routine: (signal: AbortSignal) => Promise<void>) => Promise<void>,
): Promise<{ signal: AbortSignal; release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    let finish: () => void = () => {};
    const done = new Promise<void>((r) => {
      finish = r;
    });
    let entered = false;
    const whole = using(async (signal) => {
      entered = true;
      resolve({
        signal,
        release: async () => {
          finish();
          await whole;
        },
      });
      await done;
    });
    whole.catch((error: unknown) => {
      if (!entered) reject(error);
    });
  });
}
