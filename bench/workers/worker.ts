// A benchmark worker process: drives contenders on behalf of the parent (bench/index.ts), which
// talks to it over IPC (bench/workers/protocol.ts). Every scenario's worker is this one. Timestamps
// it reports are performance.timeOrigin + performance.now(), which agree across processes on one
// machine.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { contender } from '../contenders/index.ts';
import type { ContenderClient, Held } from '../contenders/types.ts';
import { now } from '../lib/stats.ts';
import { errorText, inPool } from '../scenarios/context.ts';
import { Probe } from '../scenarios/stages.ts';
import { herdNotice, runHerd } from './herd.ts';
import { runLoss } from './loss.ts';
import { pairs } from './pairs.ts';
import type {
  CpuSample,
  Event,
  HandoffRun,
  HoldResult,
  MemorySample,
  Notice,
  Reply,
  Request,
  Target,
  WaitResult,
} from './protocol.ts';

const me = Number(process.env['BENCH_WORKER'] ?? '0');
// The budget's traced side: spans recorded as an application that exports them records them (a
// batch processor), into an exporter that drops them, so that the figure is the client's own cost.
if (process.env['BENCH_TRACING'] === 'record') {
  const { trace } = await import('@opentelemetry/api');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const exporter = {
    export: (_: unknown, done: (r: { code: 0 }) => void) => done({ code: 0 }),
    shutdown: async () => {},
  };
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
}
// Before any client connects: it instruments sockets as they open.
const probe = Probe.install();
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

async function connect(id: string, target: Target): Promise<ContenderClient> {
  const c = contender(id);
  if ('url' in target) return c.connect(target.url);
  if (c.connectCluster === undefined) throw new Error(`${id} has no Redis Cluster support`);
  return c.connectCluster(target.rootNodes);
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

/** Acquire, hold, release, then step aside until another process holds the lock. */
async function handoff(req: Extract<Request, { cmd: 'handoff' }>): Promise<HandoffRun> {
  const c = client(req.contender);
  const holdMax = req.holdMax ?? req.hold;
  stopping = false;
  let rounds = 0;
  if (probe !== undefined)
    probe.run.acquisitions.length = probe.run.releases.length = probe.run.attempts.length = 0;
  while (!stopping) {
    probe?.beforeAcquire();
    const lease = await c.acquire(req.name, { ttl: req.ttl });
    const t = now();
    probe?.acquired(t);
    send({ event: 'acq', worker: me, t });
    rounds++;
    if (!stopping) await sleep(req.hold + Math.random() * (holdMax - req.hold));
    const released = now();
    // Armed before the release is sent: any holder reported from here on took it after us.
    const stepAside = new Promise<void>((resolve) => {
      otherHolder = (notice) => {
        if (notice.by !== me && notice.t > released) resolve();
      };
      if (stopping) resolve();
    });
    send({ event: 'rel', worker: me, t: released });
    probe?.beforeRelease();
    await lease.release();
    probe?.released(released);
    await stepAside;
    otherHolder = undefined;
  }
  return { rounds, ...(probe === undefined ? {} : { stages: probe.run }) };
}

async function hold(req: Extract<Request, { cmd: 'hold' }>): Promise<HoldResult> {
  const c = client(req.contender);
  const started = performance.now();
  const acquired: HoldResult['acquired'] = [];
  await inPool(req.names, req.concurrency, async (name) => {
    keep(await c.acquire(name, { ttl: req.ttl }));
    acquired.push({ name, t: now() });
    if (req.gap > 0) await sleep(req.gap);
  });
  return { acquired, ms: performance.now() - started };
}

async function wait(req: Extract<Request, { cmd: 'wait' }>): Promise<WaitResult> {
  const c = client(req.contender);
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  waits.set(req.tag, controller);
  const result: WaitResult = { acquired: [], aborted: 0, failed: [] };
  await Promise.all(
    req.names.map(async (name) => {
      try {
        const lease = await c.acquire(name, { ttl: req.ttl, signal: controller.signal });
        result.acquired.push({ name, t: now() });
        if (req.release) await lease.release();
        else keep(lease);
      } catch (error) {
        if (controller.signal.aborted) result.aborted++;
        else result.failed.push(String(error));
      }
    }),
  );
  waits.delete(req.tag);
  return result;
}

async function releaseAll(): Promise<{ ms: number; lost: number; released: number }> {
  const started = performance.now();
  const leases = held.splice(0);
  const lost = lostCount;
  await inPool(leases, 64, async (lease) => {
    await lease.release().catch(() => {});
  });
  lostCount = 0;
  return { ms: performance.now() - started, lost, released: leases.length };
}

async function handle(request: Request): Promise<unknown> {
  switch (request.cmd) {
    case 'init':
      if (!clients.has(request.contender))
        clients.set(request.contender, await connect(request.contender, request));
      return null;
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
      const { heapUsed, rss, external, arrayBuffers } = process.memoryUsage();
      return { heapUsed, rss, external, arrayBuffers } satisfies MemorySample;
    }
    case 'cpu': {
      const usage = process.cpuUsage();
      return { cpu: (usage.user + usage.system) / 1000, t: performance.now() } satisfies CpuSample;
    }
    case 'handoff':
      return handoff(request);
    case 'hold':
      return hold(request);
    case 'wait':
      return wait(request);
    case 'releaseAll':
      return releaseAll();
    case 'lost':
      return lostCount;
    case 'herd':
      return runHerd(client(request.contender), request, me, send);
    case 'loss':
      gc(); // what module loading or the last round left is not collected amid this round's samples
      return runLoss(client(request.contender), request);
    case 'pairs':
      return pairs(client(request.contender), request, me, contender(request.contender).baseline !== true);
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
    // process.exit() still writes a --cpu-prof profile (a SIGKILL would not).
    else if (message.notice === 'exit') process.exit(0);
    return;
  }
  handle(message).then(
    (value) => send({ id: message.id, ok: true, value }),
    (error: unknown) => send({ id: message.id, ok: false, error: errorText(error, true) }),
  );
});
process.on('disconnect', () => process.exit(0));
send({ event: 'ready', worker: me });
