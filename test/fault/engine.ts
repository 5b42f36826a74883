// Runs one fault scenario in one mode: starts the lock servers, a proxy per worker and the
// fenced workers, plays the scenario's fault through its FaultContext, stops everything, then hands
// what the workers and the resource saw to the checker.
import { setTimeout as sleep } from 'node:timers/promises';
import { fairLayout } from '../../src/primitives/fair.ts';
import { mutexLayout } from '../../src/primitives/mutex.ts';
import { rwLayout } from '../../src/primitives/rwlock.ts';
import { semaphoreLayout } from '../../src/primitives/semaphore.ts';
import { FakeClock } from '../harness/fake-clock.ts';
import { hostNow } from '../harness/host-clock.ts';
import { FaultProxy } from '../harness/proxy.ts';
import { command } from '../harness/resp.ts';
import { Worker } from '../harness/worker.ts';
import { check, type Pause, type WorkerEvent } from './checker.ts';
import type { Mode } from './modes.ts';
import type {
  FaultContext,
  FaultPrimitive,
  FaultWorker,
  LockServer,
  RunOptions,
  RunResult,
  Scenario,
} from './types.ts';
import { WALL_CLOCK_NOTE_MS, watchWallClock } from './wall-clock.ts';
import type { WorkerConfig } from './workers/fenced-worker.ts';

const WORKER_FILE = new URL('./workers/fenced-worker.ts', import.meta.url).pathname;
/** Fenced writes per critical section. */
const WRITES = 8;
const SKEW_FILE = new URL('../harness/skew-clock.ts', import.meta.url).pathname;

let runCounter = 0;

/** Runs one scenario in one mode: servers, proxies, workers, the fault, then the checker. */
export async function runScenario(scenario: Scenario, mode: Mode, options: RunOptions): Promise<RunResult> {
  const started = hostNow();
  const wallClock = watchWallClock();
  const { rounds, resource } = options;
  const ttl = scenario.ttl?.(options.ttl) ?? options.ttl;
  const primitive = options.primitive ?? 'mutex';
  runCounter += 1;
  const tag = `${scenario.id}-${mode.name}-${primitive}-${process.pid}-${runCounter}`;
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
  const checkWaiters: ((id: string, last: boolean) => boolean)[] = [];
  const stallWaiters = new Map<string, () => void>();
  const endWaiters: ((event: WorkerEvent) => void)[] = [];
  const heals: number[] = [];
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
          ...(scenario.commandTimeout === undefined ? {} : { commandTimeout: scenario.commandTimeout(ttl) }),
        },
        prefix,
        name: 'resource',
        ttl,
        resourceUrl: resource.url,
        namespace: tag,
        writes: WRITES,
        gap: Math.round(ttl / 5),
        work: Math.round(ttl / 10),
        primitive,
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
          if (event.type === 'check') {
            const last = Number(event['seq']) === WRITES - 1;
            for (const wake of checkWaiters.splice(0)) if (!wake(id, last)) checkWaiters.push(wake);
          }
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
      lockKey: lockKeyOf(prefix, primitive),
      ...(lock.failover === undefined
        ? {}
        : { failover: () => lock.failover!(lockKeyOf(prefix, primitive)) }),
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
      nextCheck: async (onlyLast = false) => {
        const id = await new Promise<string>((resolve) =>
          checkWaiters.push((worker, last) => {
            if (onlyLast && !last) return false;
            resolve(worker);
            return true;
          }),
        );
        return workers.find((w) => w.id === id)!;
      },
      ...(clock === undefined
        ? {}
        : {
            setServerClock: async (wall: number, servers: readonly LockServer[] = lock.servers) => {
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
      healed: () => {
        heals.push(hostNow());
      },
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
      for (const proxy of w.proxies) {
        proxy.blackhole(false);
        proxy.hold(false);
      }
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
  const result = check(events, await resource.log(tag), pauses, exits, heals);
  if (failure !== undefined) result.errors.push(failure);
  const moved = wallClock.stop();
  if (moved > WALL_CLOCK_NOTE_MS) {
    notes.push(
      `the wall clock (what Redis expires keys by) moved ${moved.toFixed(1)} ms against the monotonic ` +
        'clock (what leases and this checker measure by) during the run',
    );
  }
  return {
    ...result,
    scenario: scenario.id,
    mode: mode.name,
    primitive,
    ttl,
    notes,
    seconds: (hostNow() - started) / 1_000,
  };
}

/** The key that says who holds `primitive` of the workers' name ('resource'). */
function lockKeyOf(prefix: string, primitive: FaultPrimitive): string {
  const keys = {
    mutex: () => mutexLayout.keys(prefix, 'resource').lock,
    semaphore: () => semaphoreLayout.keys(prefix, 'resource').set,
    write: () => rwLayout.keys(prefix, 'resource').writer,
    fair: () => fairLayout.keys(prefix, 'resource').lock,
  };
  return keys[primitive]();
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
