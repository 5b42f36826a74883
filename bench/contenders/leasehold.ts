import { pathToFileURL } from 'node:url';
import type { Leasehold } from '../../src/index.ts';
import type { Contender, ContenderClient, ContenderInfo, Held } from './types.ts';
import { ownVersion, packageVersion } from './util.ts';

type Driver = 'node-redis' | 'ioredis';
type LeaseholdModule = typeof import('../../src/index.ts');

/** This tree's src/, or the build of another commit that `--baseline=<commit>` compiled. */
export type Build = 'current' | 'baseline';

// Loaded lazily, so that a broken core shows up as "unavailable" in the report instead of
// stopping the peers' measurements. BENCH_LEASEHOLD names a compiled copy of src/ and
// BENCH_LEASEHOLD_BASELINE one of the baseline commit (bench/lib/build.ts, set by bench/index.ts
// and inherited by the workers); without the first, src/ runs through tsx. The baseline's API is
// taken to be the one used here (connect, acquire, forceAcquire, lease.signal, release).
const loaded = new Map<Build, Promise<LeaseholdModule>>();
export function load(build: Build): Promise<LeaseholdModule> {
  let mod = loaded.get(build);
  if (mod === undefined) {
    const compiled = process.env[build === 'current' ? 'BENCH_LEASEHOLD' : 'BENCH_LEASEHOLD_BASELINE'];
    mod = compiled
      ? (import(pathToFileURL(compiled).href) as Promise<LeaseholdModule>)
      : build === 'current'
        ? import('../../src/index.ts')
        : Promise.reject(new Error('no baseline build: run the bench with --baseline=<commit>'));
    loaded.set(build, mod);
  }
  return mod;
}

type Options = { ttl: number; signal?: AbortSignal };
type Lease = { signal: AbortSignal; release(): Promise<unknown> };

/**
 * What is taken: the mutex, or (at one holder at a time, so that the handoff scenarios time a
 * permit's handoff as they time a mutex's) a semaphore of limit 1, the fair lock, a read-write
 * lock's write lease: each primitive whose waiters a release grants to directly (issue 27).
 */
const KINDS = {
  mutex: {
    label: '',
    keyOf: (name: string) => `leasehold:{${name}}`,
    api: 'lh.acquire(name, { ttl }); lease.release()',
    take: (lh: Leasehold, name: string, o: Options): Promise<Lease> => lh.acquire(name, o),
  },
  semaphore: {
    label: 'semaphore, limit 1',
    keyOf: (name: string) => `leasehold:{${name}}:sem`,
    api: 'lh.semaphore(name, { limit: 1 }).acquire({ ttl }); lease.release()',
    take: (lh: Leasehold, name: string, o: Options): Promise<Lease> =>
      lh.semaphore(name, { limit: 1 }).acquire(o),
  },
  fair: {
    label: 'fair lock',
    keyOf: (name: string) => `leasehold:{${name}}:fair`,
    api: 'lh.fairLock(name).acquire({ ttl }); lease.release()',
    take: (lh: Leasehold, name: string, o: Options): Promise<Lease> => lh.fairLock(name).acquire(o),
  },
  write: {
    label: 'read-write lock, write lease',
    keyOf: (name: string) => `leasehold:{${name}}:rw:writer`,
    api: 'lh.readWriteLock(name).write({ ttl }); lease.release()',
    take: (lh: Leasehold, name: string, o: Options): Promise<Lease> => lh.readWriteLock(name).write(o),
  },
} as const;

// The lease's `signal` is read here on every acquisition, as users who watch it do: a lease makes
// its AbortController on first use of `signal`, and every figure includes that.
export const held = (lease: Lease): Held => ({
  signal: lease.signal,
  release: async () => {
    await lease.release();
  },
});

/** The low-latency contenders' PING interval: `lowLatency: true`'s 2 ms unless BENCH_LOW_LATENCY_INTERVAL says. */
const lowLatencyInterval = (): number => Number(process.env['BENCH_LOW_LATENCY_INTERVAL'] ?? 2);

/**
 * leasehold with one of its drivers and default settings (notifications: 'tracking'); `baseline`:
 * the build of the commit given by `--baseline`, labelled with that commit; `lowLatency`: its
 * opt-in warm waiter; `kind`: the primitive (the handoff scenarios time all four).
 */
export function leasehold(
  driver: Driver,
  build: Build = 'current',
  lowLatency = false,
  kind: keyof typeof KINDS = 'mutex',
): Contender {
  const baseline = build === 'baseline';
  const k = KINDS[kind];
  const suffix = `${lowLatency ? '-low-latency' : ''}${kind === 'mutex' ? '' : `-${kind}`}`;
  const id = `leasehold-${baseline ? 'baseline-' : ''}${driver}${suffix}`;
  const open = async (
    target: { url: string } | { cluster: { rootNodes: string[] } },
  ): Promise<ContenderClient> => {
    const { Leasehold } = await load(build);
    // leasehold imports its client library lazily inside connect(), under its 5 s connectTimeout;
    // a cold import in a freshly started worker on a busy machine can take most of that.
    await import(driver === 'node-redis' ? 'redis' : 'ioredis');
    const lh = await Leasehold.connect({
      ...target,
      driver,
      ...(lowLatency ? { lowLatency: { interval: lowLatencyInterval(), window: 1_000 } } : {}),
    });
    return {
      // The default timeout is Infinity: acquire() itself waits as long as it takes.
      acquire: async (name, { ttl, signal }) =>
        held(await k.take(lh, name, { ttl, ...(signal ? { signal } : {}) })),
      ...(kind === 'mutex'
        ? { forceAcquire: async (name: string, ttl: number) => held(await lh.forceAcquire(name, { ttl })) }
        : {}),
      close: () => lh.close(),
    };
  };
  return {
    id,
    ...(baseline ? { baseline: true } : {}),
    ...(lowLatency ? { scenarios: ['handoff', 'idleHandoff', 'idle'] } : {}),
    ...(kind === 'mutex' ? {} : { scenarios: ['handoff', 'idleHandoff'] }),
    keyOf: k.keyOf,
    async info(): Promise<ContenderInfo> {
      // Read here, not above: bench/index.ts sets it after this module is imported.
      const commit = process.env['BENCH_LEASEHOLD_BASELINE_COMMIT'] ?? 'baseline';
      const source = baseline ? `the ${commit} build` : 'src/index.ts';
      const mod = await load(build).catch((error: unknown) => error);
      const missing =
        mod instanceof Error || typeof mod !== 'object' || mod === null
          ? `${source} failed to load: ${String(mod)}`
          : typeof (mod as Partial<LeaseholdModule>).Leasehold?.connect !== 'function'
            ? `${source} does not export Leasehold`
            : undefined;
      const name = ['leasehold', k.label, baseline ? `@ ${commit}` : ''].filter((x) => x !== '').join(' ');
      return {
        id,
        label: `${name} (${driver}${lowLatency ? ', lowLatency' : ''})`,
        library: 'leasehold',
        version: baseline
          ? `baseline: ${process.env['BENCH_LEASEHOLD_BASELINE_NOTE'] ?? 'not built'}`
          : `${ownVersion()} (this repository; ${process.env['BENCH_LEASEHOLD_NOTE'] ?? 'src/ through tsx'})`,
        client: driver === 'node-redis' ? 'redis' : 'ioredis',
        clientVersion: packageVersion(driver === 'node-redis' ? 'redis' : 'ioredis'),
        api: `Leasehold.connect({ url, driver: '${driver}' }); ${k.api}`,
        lossSignal: 'lease.signal (aborts on an invalidation push, a failed extension or lapsed validity)',
        waiting:
          'a direct grant from the release, an invalidation push, or a timer at the holder’s PTTL; no polling',
        settings: {
          driver,
          notifications: 'tracking',
          prefix: 'leasehold',
          ttl: 'default 10000; set per acquire to the scenario ttl',
          timeout: 'Infinity (default)',
          renewal: 'every ttl / 3, batched',
          retryDelay: 100,
          ...(lowLatency
            ? {
                lowLatency: `${lowLatencyInterval() === 2 ? 'true' : `{ interval: ${lowLatencyInterval()} }`} (a PING every ${lowLatencyInterval()} ms during the first 1000 ms of a wait)`,
              }
            : {}),
        },
        ...(missing === undefined ? {} : { unavailable: missing }),
      };
    },
    connect: (url) => open({ url }),
    ...(kind === 'mutex'
      ? { connectCluster: (rootNodes) => open({ cluster: { rootNodes: [...rootNodes] } }) }
      : {}),
  };
}
