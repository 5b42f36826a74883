import { pathToFileURL } from 'node:url';
import type { Lease } from '../../src/index.ts';
import type { Contender, ContenderClient, ContenderInfo, Held } from './types.ts';
import { ownVersion, packageVersion } from './util.ts';

type Driver = 'node-redis' | 'ioredis';
type LeaseholdModule = typeof import('../../src/index.ts');

// Loaded lazily, so that a broken core shows up as "unavailable" in the report instead of
// stopping the peers' measurements. BENCH_LEASEHOLD names a compiled copy (bench/lib/build.ts,
// set by bench/index.ts and inherited by the workers); without it, src/ runs through tsx.
let loaded: Promise<LeaseholdModule> | undefined;
function load(): Promise<LeaseholdModule> {
  const compiled = process.env['BENCH_LEASEHOLD'];
  loaded ??= compiled
    ? (import(pathToFileURL(compiled).href) as Promise<LeaseholdModule>)
    : import('../../src/index.ts');
  return loaded;
}

function held(lease: Lease): Held {
  return {
    signal: lease.signal,
    release: async () => {
      await lease.release();
    },
  };
}

/** leasehold with one of its drivers and default settings (notifications: 'tracking'). */
export function leasehold(driver: Driver): Contender {
  const id = driver === 'node-redis' ? 'leasehold-node-redis' : 'leasehold-ioredis';
  return {
    id,
    // Documented layout `<prefix>:{<name>}` with the default prefix.
    keyOf: (name) => `leasehold:{${name}}`,
    async info(): Promise<ContenderInfo> {
      const mod = await load().catch((error: unknown) => error);
      const missing =
        mod instanceof Error || typeof mod !== 'object' || mod === null
          ? `src/index.ts failed to load: ${String(mod)}`
          : typeof (mod as Partial<LeaseholdModule>).Leasehold?.connect !== 'function'
            ? 'src/index.ts does not export Leasehold yet'
            : undefined;
      return {
        id,
        label: `leasehold (${driver})`,
        library: 'leasehold',
        version: `${ownVersion()} (this repository; ${process.env['BENCH_LEASEHOLD_NOTE'] ?? 'src/ through tsx'})`,
        client: driver === 'node-redis' ? 'redis' : 'ioredis',
        clientVersion: packageVersion(driver === 'node-redis' ? 'redis' : 'ioredis'),
        api: `Leasehold.connect({ url, driver: '${driver}' }); lh.acquire(name, { ttl }); lease.release()`,
        lossSignal: 'lease.signal (aborts on an invalidation push, a failed extension or lapsed validity)',
        waiting: 'acquire() waits for an invalidation push or a timer at the holder’s PTTL; no polling',
        settings: {
          driver,
          notifications: 'tracking',
          prefix: 'leasehold',
          ttl: 'default 10000; set per acquire to the scenario ttl',
          timeout: 'Infinity (default)',
          renewal: 'every ttl / 3, batched',
          retryDelay: 100,
        },
        ...(missing === undefined ? {} : { unavailable: missing }),
      };
    },
    async connect(url: string): Promise<ContenderClient> {
      const { Leasehold } = await load();
      // leasehold imports its client library lazily inside connect(), under its 5 s connectTimeout;
      // a cold import in a freshly started worker on a busy machine can take most of that.
      await import(driver === 'node-redis' ? 'redis' : 'ioredis');
      const lh = await Leasehold.connect({ url, driver });
      return {
        // The default timeout is Infinity: acquire() itself waits as long as it takes.
        acquire: async (name, { ttl, signal }) =>
          held(await lh.acquire(name, { ttl, ...(signal ? { signal } : {}) })),
        async forceAcquire(name, ttl) {
          return held(await lh.forceAcquire(name, { ttl }));
        },
        async close() {
          await lh.close();
        },
      };
    },
  };
}
