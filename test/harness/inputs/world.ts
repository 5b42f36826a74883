/**
 * Where the input properties run (a MemoryBackend, fresh per case; or one redis-server, shared by
 * a property's cases) and what every case must satisfy whatever its input: it ends within a
 * bound (never hangs), Node emits no warning while it runs (a TimeoutOverflowWarning is how an
 * out-of-range timer shows), and no promise rejection goes unhandled.
 */
import assert from 'node:assert/strict';
import { isFenceMark } from '../../../src/base/fence-mark.ts';
import { type ConnectOptions, Leasehold, MemoryBackend } from '../../../src/index.ts';
import { testDriver, testNotifications, uniquePrefix, within } from '../leasehold.ts';
import type { RedisServer } from '../redis-server.ts';
import { command } from '../resp.ts';

/** Two instances on one store: `a` is the caller under test, `b` another process. */
export interface World {
  readonly a: Leasehold;
  readonly b: Leasehold;
  /** The key prefix both use. */
  readonly prefix: string;
  /** Every key under the prefix, with its PTTL (-1: no TTL). */
  keys(): Promise<{ key: string; pttl: number }[]>;
  /** Connects one more instance on the same store with `options` (for connect()'s properties). */
  connect(options: Record<string, unknown>): Promise<Leasehold>;
  /** The same store, named for connect(): `{ backend }` or `{ url, driver }`. */
  readonly where: Record<string, unknown>;
}

/** A place to run cases, and how many each property gets there. */
export interface Target {
  readonly label: string;
  /** fast-check runs per property (the memory backend affords many, a Redis fewer). */
  readonly runs: number;
  /**
   * A world for one case; `end(failed)` after the case closes it, or leaves a shared one open
   * unless the case failed (what a failed case left held must not make the next one wait).
   */
  world(): Promise<{ world: World; end(failed: boolean): Promise<void> }>;
  /** Closes whatever is shared between cases. */
  close(): Promise<void>;
}

/** The default TTL of every world's instances. */
export const WORLD_TTL = 10_000;

/** A fresh MemoryBackend and two instances on it per case: nothing carries over between cases. */
export function memoryTarget(runs: number): Target {
  return {
    label: 'memory',
    runs,
    async world() {
      const backend = new MemoryBackend();
      const prefix = uniquePrefix('in');
      const base = { backend, prefix, ttl: WORLD_TTL };
      const opened: Leasehold[] = [];
      const connect = async (options: Record<string, unknown>) => {
        const lh = await Leasehold.connect({ ...base, ...options } as ConnectOptions);
        opened.push(lh);
        return lh;
      };
      const world: World = {
        a: await connect({}),
        b: await connect({}),
        prefix,
        where: { backend },
        connect,
        keys: async () =>
          backend
            .keys()
            .filter((key) => key.startsWith(`${prefix}:`))
            .map((key) => ({ key, pttl: backend.pttl(key) })),
      };
      return { world, end: () => Promise.all(opened.map((lh) => lh.close())).then(() => {}) };
    },
    async close() {},
  };
}

/** One redis-server: one pair of instances per property, its cases on the same prefix. */
export function redisTarget(server: () => RedisServer, runs: number): Target {
  let shared: World | undefined;
  const opened: Leasehold[] = [];
  const open = async (): Promise<World> => {
    const prefix = uniquePrefix('in');
    const where = { url: server().url, driver: testDriver, notifications: testNotifications };
    const connect = async (options: Record<string, unknown>) => {
      const lh = await Leasehold.connect({
        ...where,
        prefix,
        ttl: WORLD_TTL,
        ...(testNotifications === 'polling' ? { retryDelay: 20 } : {}),
        ...options,
      } as ConnectOptions);
      opened.push(lh);
      return lh;
    };
    return {
      a: await connect({}),
      b: await connect({}),
      prefix,
      where,
      connect,
      keys: () => scanKeys(server().port, prefix),
    };
  };
  return {
    label: `redis ${testDriver}/${testNotifications}`,
    runs,
    async world() {
      shared ??= await open();
      return {
        world: shared,
        end: async (failed) => {
          if (!failed) return;
          await Promise.all(opened.splice(0).map((lh) => lh.close()));
          shared = undefined;
        },
      };
    },
    async close() {
      await Promise.all(opened.map((lh) => lh.close()));
      shared = undefined;
    },
  };
}

/** SCAN (never KEYS) of `prefix:*` and each key's PTTL. */
async function scanKeys(port: number, prefix: string): Promise<{ key: string; pttl: number }[]> {
  const out: { key: string; pttl: number }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = (await command(port, ['SCAN', cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000])) as [
      string,
      string[],
    ];
    cursor = next;
    for (const key of keys) out.push({ key, pttl: Number(await command(port, ['PTTL', key])) });
  } while (cursor !== '0');
  return out;
}

/** Longest a case may take before it counts as hung. */
export const CASE_BOUND_MS = 10_000;

/**
 * Watches the process for the length of a property: Node warnings and unhandled rejections are
 * collected per case, and `run()` fails a case that produced any, or that did not end in time.
 */
export class CaseGuard {
  readonly #warnings: Error[] = [];
  readonly #rejections: unknown[] = [];
  readonly #onWarning = (warning: Error) => this.#warnings.push(warning);
  readonly #onRejection = (reason: unknown) => this.#rejections.push(reason);

  constructor() {
    process.on('warning', this.#onWarning);
    process.on('unhandledRejection', this.#onRejection);
  }

  dispose(): void {
    process.off('warning', this.#onWarning);
    process.off('unhandledRejection', this.#onRejection);
  }

  /** Runs one case in its own world and checks what every case must satisfy. */
  async run(target: Target, what: string, body: (world: World) => Promise<void>): Promise<void> {
    this.#warnings.length = 0;
    this.#rejections.length = 0;
    const { world, end } = await target.world();
    let failed = true;
    try {
      await within(body(world), CASE_BOUND_MS, `${what} (the case hung)`);
      failed = false;
    } finally {
      await end(failed);
    }
    // Node emits its warnings on the next tick, and reports unhandled rejections after the
    // microtask queue drains: let both arrive before looking.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 1));
    assert.deepEqual(
      this.#warnings.map((w) => `${w.name}: ${w.message}`),
      [],
      `${what}: Node warned`,
    );
    assert.deepEqual(this.#rejections.map(String), [], `${what}: unhandled rejection`);
  }
}

/**
 * Every key under the world's prefix has a TTL: nothing is left to live forever, but the fence
 * marks (src/base/fence-mark.ts), one per slot the names used, never one per name.
 */
export async function assertAllExpire(world: World, what: string): Promise<void> {
  const forever = (await world.keys())
    .filter(({ key, pttl }) => pttl === -1 && !isFenceMark(key))
    .map(({ key }) => key);
  assert.deepEqual(forever, [], `${what}: keys without a TTL`);
}
