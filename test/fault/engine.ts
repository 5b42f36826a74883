import { setTimeout as sleep } from 'node:timers/promises';
import { checkConnectOptions } from '../../src/options/index.ts';
import { RedisCluster } from '../harness/cluster.ts';
import { FakeClock } from '../harness/fake-clock.ts';
import { hostNow } from '../harness/host-clock.ts';
import { startMasters } from '../harness/masters.ts';
import { FaultProxy } from '../harness/proxy.ts';
import type { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';
import { type CheckResult, check, type Pause, type WorkerEvent } from './checker.ts';
import type { FencedResource } from './resource.ts';
import type { WorkerConfig } from './workers/fenced-worker.ts';

const WORKER_FILE = new URL('./workers/fenced-worker.ts', import.meta.url).pathname;
const SKEW_FILE = new URL('../harness/skew-clock.ts', import.meta.url).pathname;

export type ModeName = 'single' | 'quorum' | 'cluster';

/** The lock servers of one run, as a mode lays them out. */
export interface LockServers {
  /** The processes faults are applied to (a cluster's masters). */
  servers: readonly RedisServer[];
  urls: readonly string[];
  /** Whether each worker reaches each server through its own FaultProxy. */
  proxied: boolean;
  /** Cluster only: SIGKILLs the master serving `key` and waits for its replica to take over. */
  failover?: (key: string) => Promise<void>;
  stop(): Promise<void>;
}

/** How one deployment mode is laid out: its lock servers, and how a worker connects to them. */
export interface Mode {
  name: ModeName;
  /** Whether workers can be given a proxy of their own to each lock server. */
  proxied: boolean;
  /** Starts the lock servers; `env` goes to every redis-server process (a clock shim's). */
  start(env?: NodeJS.ProcessEnv): Promise<LockServers>;
  connect(urls: readonly string[]): Record<string, unknown>;
}

async function masters(n: number, env?: NodeJS.ProcessEnv): Promise<LockServers> {
  const started = await startMasters(n, env === undefined ? {} : { env });
  return { servers: started.servers, urls: started.urls, proxied: true, stop: started.stopAll };
}

export const MODES: Record<ModeName, Mode> = {
  single: {
    name: 'single',
    proxied: true,
    start: (env) => masters(1, env),
    connect: (urls) => ({ url: urls[0] }),
  },
  quorum: {
    name: 'quorum',
    proxied: true,
    start: (env) => masters(3, env),
    connect: (urls) => ({ nodes: [...urls] }),
  },
  // Cluster nodes announce their own ports (MOVED, CLUSTER SLOTS), so workers connect directly:
  // no per-worker proxy, and the scenarios that need one do not apply.
  cluster: {
    name: 'cluster',
    proxied: false,
    start: async (env) => {
      const cluster = await RedisCluster.start({
        masters: 3,
        replicasPerMaster: 1,
        ...(env === undefined ? {} : { env }),
      });
      return {
        servers: cluster.masters.map((node) => node.server),
        urls: cluster.rootNodes.map((node) => node.url),
        proxied: false,
        failover: async (key) => {
          await cluster.failover(cluster.masterFor(key));
        },
        stop: () => cluster.stop(),
      };
    },
    connect: (urls) => ({ cluster: { rootNodes: [...urls] } }),
  },
};

/** Why a scenario cannot run in a mode yet (Leasehold.connect() refuses its options), or undefined. */
export function pendingReason(mode: Mode, scenario?: Scenario): string | undefined {
  if (scenario?.serverClock) {
    const missing = FakeClock.missing();
    if (missing !== undefined) return missing;
  }
  try {
    checkConnectOptions({
      ...mode.connect(['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3']),
      ...scenario?.connectExtra?.(mode.name),
    });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** One worker process with its own proxy to every lock server (so faults can single it out). */
export interface FaultWorker {
  id: string;
  worker: Worker;
  proxies: FaultProxy[];
}

/** What a scenario's fault script may do while the workers run. */
export interface FaultContext {
  ttl: number;
  servers: readonly RedisServer[];
  workers: readonly FaultWorker[];
  /** The Redis key of the lock the workers contend for. */
  lockKey: string;
  /** Cluster only: fails over the master that serves the lock key. */
  failover?: () => Promise<void>;
  /** A worker that has been inside its critical section for at least `held` ms. */
  holder(held?: number): Promise<FaultWorker>;
  /** The worker that next reports a passed check of its signal, right before its (slow) write. */
  nextCheck(): Promise<FaultWorker>;
  /**
   * Sets the wall-clock offset (ms from true time) of `servers` (default: every lock server), through
   * the LD_PRELOAD shim of test/harness/fake-clock.ts, checks it with TIME, and resolves 2 x TTL
   * later, noting how soon the holder of the moment stopped trusting its lease. Only for scenarios
   * with `serverClock`.
   */
  setServerClock?(wall: number, servers?: readonly RedisServer[]): Promise<void>;
  /**
   * Blocks `target`'s event loop with a busy wait of `ms` (its timers fire late, nothing runs),
   * recorded like a pause so the checker can discount it from lags. Resolves when the stall ended.
   */
  stall(target: FaultWorker, ms: number): Promise<void>;
  /** SIGSTOP / SIGCONT of a worker, recorded so the checker can discount the pause from lags. */
  pause(target: FaultWorker): void;
  resume(target: FaultWorker): void;
  note(text: string): void;
}

export interface Scenario {
  id: string;
  title: string;
  /** Per worker index: a clock skew (see test/harness/skew-clock.ts). */
  skew?: (index: number) => { rate: number; offset: number } | undefined;
  /** Set when overlaps are expected (not something a lease can prevent): the reason. */
  mayOverlap?: string;
  /** Set when fencing tokens may go backwards in this scenario: the reason. */
  mayRegress?: string;
  /** The fault needs a proxy per worker (partitions, latency): not available in cluster mode. */
  needsProxy?: boolean;
  /** The lock servers run under the clock shim (test/harness/fake-clock.ts): needs gcc. */
  serverClock?: boolean;
  /** Extra Leasehold.connect() options for the workers, per mode. */
  connectExtra?: (mode: ModeName) => Record<string, unknown>;
  /** What a user must do where the lease alone cannot protect them. */
  advice: string;
  fault(ctx: FaultContext, rounds: number): Promise<void>;
}

export interface RunOptions {
  ttl: number;
  /** How often the scenario repeats its fault. */
  rounds: number;
  workers?: number;
  resource: FencedResource;
}

export interface RunResult extends CheckResult {
  scenario: string;
  mode: ModeName;
  notes: string[];
  seconds: number;
}

let runCounter = 0;

/** Runs one scenario in one mode: servers, proxies, workers, the fault, then the checker. */
export async function runScenario(scenario: Scenario, mode: Mode, options: RunOptions): Promise<RunResult> {
  const started = hostNow();
  const wallClock = watchWallClock();
  const { ttl, rounds, resource } = options;
  runCounter += 1;
  const tag = `${scenario.id}-${mode.name}-${process.pid}-${runCounter}`;
  const clock = scenario.serverClock ? FakeClock.create() : undefined;
  if (scenario.serverClock && clock === undefined) throw new Error(FakeClock.unavailable);
  const lock = await mode.start(clock?.env);
  const prefix = `safety-${tag}`;
  const events: WorkerEvent[] = [];
  const pauses: Pause[] = [];
  const open = new Map<string, number>();
  const notes: string[] = [];
  const inside = new Map<string, number>();
  const ready = new Set<string>();
  const checkWaiters: ((id: string) => void)[] = [];
  const stallWaiters = new Map<string, () => void>();
  const endWaiters: ((event: WorkerEvent) => void)[] = [];
  const workers: FaultWorker[] = [];
  const collectors: Promise<void>[] = [];
  let failure: string | undefined;
  try {
    const startOne = async (i: number) => {
      const id = `w${i}`;
      const proxies = lock.proxied
        ? await Promise.all(lock.servers.map((server) => FaultProxy.start(server.port)))
        : [];
      const config: WorkerConfig = {
        id,
        connect: {
          ...mode.connect(lock.proxied ? proxies.map((p) => p.url) : lock.urls),
          ...scenario.connectExtra?.(mode.name),
        },
        prefix,
        name: 'resource',
        ttl,
        resourceUrl: resource.url,
        namespace: tag,
        writes: 8,
        gap: Math.round(ttl / 5),
        work: Math.round(ttl / 10),
      };
      const skew = scenario.skew?.(i);
      const env: NodeJS.ProcessEnv = { ...process.env };
      if (skew !== undefined) {
        env['LEASEHOLD_SKEW_RATE'] = String(skew.rate);
        env['LEASEHOLD_SKEW_OFFSET'] = String(skew.offset);
        notes.push(`${id} runs a clock at rate ${skew.rate} with offset ${skew.offset} ms`);
      }
      const worker = await Worker.start(WORKER_FILE, {
        args: [JSON.stringify(config)],
        env,
        execArgv: skew === undefined ? [] : ['--import', SKEW_FILE],
      });
      const fw: FaultWorker = { id, worker, proxies };
      workers[i] = fw;
      collectors.push(
        collect(fw, (event) => {
          events.push(event);
          if (event.type === 'ready') ready.add(id);
          if (event.type === 'check') for (const wake of checkWaiters.splice(0)) wake(id);
          if (event.type === 'enter') inside.set(id, Number(event['at']));
          if (event.type === 'abort' || event.type === 'exit') {
            inside.delete(id);
            for (const wake of endWaiters) wake(event);
          }
          if (event.type === 'stalled') {
            pauses.push({ worker: id, from: Number(event['from']), to: Number(event['to']) });
            stallWaiters.get(id)?.();
          }
        }),
      );
    };
    await Promise.all(Array.from({ length: options.workers ?? 3 }, (_, i) => startOne(i)));
    const readyBy = hostNow() + 30_000;
    while (ready.size < workers.length) {
      if (hostNow() > readyBy) throw new Error(`${scenario.id}: workers not ready within 30 s`);
      await sleep(20);
    }
    const ctx: FaultContext = {
      ttl,
      servers: lock.servers,
      workers,
      lockKey: `${prefix}:{resource}`,
      ...(lock.failover === undefined ? {} : { failover: () => lock.failover!(`${prefix}:{resource}`) }),
      holder: async (held = ttl / 4) => {
        const deadline = hostNow() + 20 * ttl + 10_000;
        for (;;) {
          const now = hostNow();
          // Early in its critical section, so that the fault lands while it still has work to do.
          for (const w of workers) {
            const since = inside.get(w.id);
            if (since !== undefined && now - since >= held && now - since <= held + ttl / 2) return w;
          }
          if (now > deadline) throw new Error(`${scenario.id}: no worker held the lock for ${held} ms`);
          await sleep(5);
        }
      },
      nextCheck: async () => {
        const id = await new Promise<string>((resolve) => checkWaiters.push(resolve));
        return workers.find((w) => w.id === id)!;
      },
      ...(clock === undefined
        ? {}
        : {
            setServerClock: async (wall: number, servers: readonly RedisServer[] = lock.servers) => {
              const holders = new Set(inside.keys());
              const at = hostNow();
              let heard: WorkerEvent | undefined;
              const listener = (event: WorkerEvent) => {
                if (heard === undefined && holders.has(event.worker)) heard = event;
              };
              endWaiters.push(listener);
              for (const server of servers) clock.set({ wall }, server.pid);
              // The shim re-reads its file at most once a millisecond; TIME proves the step took.
              await sleep(2);
              const read = await Promise.all(
                servers.map(async (server) => {
                  const [sec, micro] = (await command(server.port, ['TIME'])) as [string, string];
                  return Number(sec) * 1_000 + Number(micro) / 1_000 - Date.now();
                }),
              );
              notes.push(
                `wall clock of ${servers.length} lock server(s) stepped to ${wall >= 0 ? '+' : ''}${wall} ms ` +
                  `(TIME - Date.now(): ${read.map((ms) => ms.toFixed(0)).join(', ')} ms) while ` +
                  `${[...holders].join(', ') || 'nobody'} held`,
              );
              await sleep(ttl * 2);
              endWaiters.splice(endWaiters.indexOf(listener), 1);
              notes.push(
                heard === undefined
                  ? `the holder did not stop within ${ttl * 2} ms of the step`
                  : `${heard.worker} stopped trusting ${(Number(heard['at']) - at).toFixed(1)} ms after the step ` +
                      `(${heard.type}${heard['reason'] === undefined ? '' : `: ${String(heard['reason'])}`})`,
              );
            },
          }),
      stall: async (target, ms) => {
        const done = new Promise<void>((resolve) => stallWaiters.set(target.id, resolve));
        target.worker.send({ type: 'stall', ms });
        notes.push(`stalled ${target.id}'s event loop for ${ms} ms`);
        await done;
        stallWaiters.delete(target.id);
      },
      pause: (target) => {
        target.worker.pause();
        open.set(target.id, hostNow());
        notes.push(`SIGSTOP ${target.id}`);
      },
      resume: (target) => {
        target.worker.resume();
        pauses.push({ worker: target.id, from: open.get(target.id) ?? hostNow(), to: hostNow() });
        open.delete(target.id);
      },
      note: (text) => notes.push(text),
    };
    notes.push(`workers ready after ${((hostNow() - started) / 1_000).toFixed(1)} s`);
    await sleep(ttl * 1.5);
    await scenario.fault(ctx, rounds);
    await sleep(ttl * 2);
  } catch (error) {
    failure = `runner: ${String((error as Error)?.stack ?? error)}`;
  } finally {
    for (const w of workers) {
      if (open.has(w.id)) w.worker.resume();
      for (const proxy of w.proxies) proxy.blackhole(false);
      try {
        w.worker.send({ type: 'stop' });
      } catch {}
    }
    for (const server of lock.servers) server.signal('SIGCONT');
  }
  const exits = await Promise.all(
    workers.map(async (w) => {
      const giveUp = new AbortController();
      const exit = await Promise.race([
        w.worker.exited,
        sleep(15_000, undefined, { signal: giveUp.signal }).then(
          () => undefined,
          () => undefined,
        ),
      ]);
      giveUp.abort();
      if (exit !== undefined) return { worker: w.id, code: exit.code, signal: exit.signal };
      notes.push(`${w.id} did not stop within 15 s: killed`);
      await w.worker.kill();
      return { worker: w.id, code: null, signal: 'SIGKILL (did not stop)' };
    }),
  );
  await Promise.all(collectors);
  await Promise.all(workers.flatMap((w) => w.proxies.map((p) => p.stop())));
  await lock.stop();
  clock?.remove();
  const result = check(events, await resource.log(tag), pauses, exits);
  if (failure !== undefined) result.errors.push(failure);
  const moved = wallClock.stop();
  if (moved > WALL_CLOCK_NOTE_MS) {
    notes.push(
      `the wall clock (what Redis expires keys by) moved ${moved.toFixed(1)} ms against the monotonic ` +
        'clock (what leases and this checker measure by) during the run',
    );
  }
  return { ...result, scenario: scenario.id, mode: mode.name, notes, seconds: (hostNow() - started) / 1_000 };
}

/** A wall-clock movement worth a note: beyond this, it eats into the drift allowance. */
const WALL_CLOCK_NOTE_MS = 3;

/**
 * Samples the wall clock against the monotonic one every 10 ms. Redis expires keys by the wall
 * clock; leases and the checker count by the monotonic clock. A step or fast slew of the wall
 * clock (an NTP correction, a VM resynchronising after a stall) expires keys early in monotonic
 * terms, and an overlap shorter than the step is then the clock's doing, not the lock's: the run
 * says so instead of leaving it to guesswork. `stop()` returns the largest movement seen, in ms.
 */
function watchWallClock(): { stop(): number } {
  const base = Date.now() - hostNow();
  let min = 0;
  let max = 0;
  const timer = setInterval(() => {
    const offset = Date.now() - hostNow() - base;
    min = Math.min(min, offset);
    max = Math.max(max, offset);
  }, 10);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      return max - min;
    },
  };
}

/** Feeds every message of a worker to `onEvent` until it exits. */
async function collect(fw: FaultWorker, onEvent: (event: WorkerEvent) => void): Promise<void> {
  for (;;) {
    let message: Record<string, unknown>;
    try {
      message = await fw.worker.next(() => true, 2 ** 30);
    } catch {
      return;
    }
    onEvent({ ...message, worker: fw.id, type: String(message['type']) });
  }
}
