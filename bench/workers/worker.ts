// A benchmark worker process: drives one or more contenders on behalf of the parent (bench/index.ts),
// which talks to it over IPC (bench/workers/protocol.ts). Timestamps it reports are
// performance.timeOrigin + performance.now(), which agree across processes on one machine.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { contender } from '../contenders/index.ts';
import type { ContenderClient, Held } from '../contenders/types.ts';
import { now } from '../lib/stats.ts';
import { herdNotice, runHerd } from './herd.ts';
import type {
  CpuSample,
  Event,
  HoldResult,
  MemorySample,
  Notice,
  Reply,
  Request,
  WaitResult,
} from './protocol.ts';

const me = Number(process.env['BENCH_WORKER'] ?? '0');
const clients = new Map<string, ContenderClient>();
const held: Held[] = [];
const waits = new Map<string, AbortController>();
let lostCount = 0;
let stopping = false;
let otherHolder: ((notice: { by: number; t: number }) => void) | undefined;

function send(message: Reply | Event): void {
  process.send?.(message);
}

function client(id: string): ContenderClient {
  const found = clients.get(id);
  if (found === undefined) throw new Error(`contender ${id} not initialised in worker ${me}`);
  return found;
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  collect?.();
  collect?.();
}

function keep(lease: Held): void {
  held.push(lease);
  lease.signal.addEventListener('abort', () => lostCount++, { once: true });
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await task(item);
    }
  });
  await Promise.all(lanes);
}

/** Acquire, hold briefly, release, then step aside until another process holds the lock. */
async function handoff(
  id: string,
  name: string,
  ttl: number,
  hold: number,
  holdMax: number,
): Promise<number> {
  const c = client(id);
  stopping = false;
  let rounds = 0;
  while (!stopping) {
    const lease = await c.acquire(name, { ttl });
    send({ event: 'acq', worker: me, t: now() });
    rounds++;
    if (!stopping) await sleep(hold + Math.random() * (holdMax - hold));
    const released = now();
    // Armed before the release is sent: any holder reported from here on took it after us.
    const stepAside = new Promise<void>((resolve) => {
      otherHolder = (notice) => {
        if (notice.by !== me && notice.t > released) resolve();
      };
      if (stopping) resolve();
    });
    send({ event: 'rel', worker: me, t: released });
    await lease.release();
    await stepAside;
    otherHolder = undefined;
  }
  return rounds;
}

async function hold(
  id: string,
  names: string[],
  ttl: number,
  gap: number,
  limit: number,
): Promise<HoldResult> {
  const c = client(id);
  const started = performance.now();
  const acquired: HoldResult['acquired'] = [];
  await pool(names, limit, async (name) => {
    keep(await c.acquire(name, { ttl }));
    acquired.push({ name, t: now() });
    if (gap > 0) await sleep(gap);
  });
  return { acquired, ms: performance.now() - started };
}

async function wait(
  id: string,
  names: string[],
  ttl: number,
  tag: string,
  release: boolean,
): Promise<WaitResult> {
  const c = client(id);
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  waits.set(tag, controller);
  const result: WaitResult = { acquired: [], aborted: 0, failed: [] };
  await Promise.all(
    names.map(async (name) => {
      try {
        const lease = await c.acquire(name, { ttl, signal: controller.signal });
        result.acquired.push({ name, t: now() });
        if (release) await lease.release();
        else keep(lease);
      } catch (error) {
        if (controller.signal.aborted) result.aborted++;
        else result.failed.push(String(error));
      }
    }),
  );
  waits.delete(tag);
  return result;
}

async function releaseAll(): Promise<{ ms: number; lost: number; released: number }> {
  const started = performance.now();
  const leases = held.splice(0);
  const lost = lostCount;
  await pool(leases, 64, async (lease) => {
    await lease.release().catch(() => {});
  });
  lostCount = 0;
  return { ms: performance.now() - started, lost, released: leases.length };
}

async function handle(request: Request): Promise<unknown> {
  switch (request.cmd) {
    case 'init': {
      if (!clients.has(request.contender)) {
        clients.set(request.contender, await contender(request.contender).connect(request.url));
      }
      return null;
    }
    case 'close': {
      const c = clients.get(request.contender);
      clients.delete(request.contender);
      await c?.close();
      return null;
    }
    case 'clock':
      return now();
    case 'mem': {
      gc();
      await sleep(20);
      gc();
      const m = process.memoryUsage();
      return {
        heapUsed: m.heapUsed,
        rss: m.rss,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
      } satisfies MemorySample;
    }
    case 'cpu': {
      const usage = process.cpuUsage();
      return { cpu: (usage.user + usage.system) / 1000, t: performance.now() } satisfies CpuSample;
    }
    case 'handoff':
      return handoff(
        request.contender,
        request.name,
        request.ttl,
        request.hold,
        request.holdMax ?? request.hold,
      );
    case 'hold':
      return hold(request.contender, request.names, request.ttl, request.gap, request.concurrency);
    case 'wait':
      return wait(request.contender, request.names, request.ttl, request.tag, request.release);
    case 'releaseAll':
      return releaseAll();
    case 'lost':
      return lostCount;
    case 'herd':
      return runHerd(client(request.contender), request, me, send);
  }
}

process.on('message', (message: Request | Notice) => {
  if ('notice' in message) {
    if (herdNotice(message)) return;
    if (message.notice === 'held') otherHolder?.(message);
    else if (message.notice === 'stop') {
      stopping = true;
      otherHolder?.({ by: -1, t: Number.POSITIVE_INFINITY });
    } else if (message.notice === 'abort') waits.get(message.tag)?.abort(new Error('benchmark window over'));
    else if (message.notice === 'exit') process.exit(0);
    return;
  }
  handle(message).then(
    (value) => send({ id: message.id, ok: true, value }),
    (error: unknown) =>
      send({
        id: message.id,
        ok: false,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
  );
});
process.on('disconnect', () => process.exit(0));
send({ event: 'ready', worker: me });
