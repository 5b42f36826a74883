// A worker process for bench/handoff-stages.ts: the handoff scenario's loop (bench/workers/worker.ts,
// acquire, hold, release, step aside until another process holds the lock) with the timestamps of
// each stage recorded by bench/stages/probe.ts. Speaks the bench's worker protocol
// (bench/workers/protocol.ts: init, handoff, close, clock; notices held, stop, exit); `contender`
// is `leasehold-node-redis`, `leasehold-ioredis`, `bare-push` or `bare-redirect`.
// BENCH_STAGES_PROBE=0 runs the same loop without the probe (the control for its own cost).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { contender as byId } from '../contenders/index.ts';
import type { ContenderClient } from '../contenders/types.ts';
import { now } from '../lib/stats.ts';
import type { Event, Notice, Reply, Request } from '../workers/protocol.ts';
import { ACQUIRE_SHA, BareLock, type BareMode, RELEASE_SHA } from './bare.ts';
import { type Attempt, type GrantRecord, Probe } from './probe.ts';

const me = Number(process.env['BENCH_WORKER'] ?? '0');
const probe = new Probe();
if (process.env['BENCH_STAGES_PROBE'] !== '0') {
  probe.install();
  probe.configure(ACQUIRE_SHA, RELEASE_SHA);
}

/** What one acquisition in this process went through (times: this process's clock). */
export interface AcquisitionRecord {
  /** acquire() resolved in user code. */
  t: number;
  attempt: Omit<Attempt, 'push'> & { pushRead?: number; scheduled?: number; delivered?: number };
  /** A direct grant's message read during this acquisition, and the acquired event after it. */
  grant?: GrantRecord;
}

export interface ReleaseRecord {
  /** Just before release() was called (the handoff scenario's release time). */
  t: number;
  /** The release script handed to socket.write. */
  written?: number;
}

export interface StagesRun {
  acquisitions: AcquisitionRecord[];
  releases: ReleaseRecord[];
  /** When each acquire attempt was written. */
  attempts: number[];
}

interface Lock {
  acquire(name: string, ttl: number): Promise<{ release(): Promise<void> }>;
  close(): Promise<void>;
}

const locks = new Map<string, Lock>();
let stopping = false;
let otherHolder: ((notice: { by: number; t: number }) => void) | undefined;

function send(message: Reply | Event): void {
  process.send?.(message);
}

async function open(id: string, url: string): Promise<Lock> {
  if (id.startsWith('bare-')) {
    const lock = await BareLock.connect(Number(new URL(url).port), id.slice(5) as BareMode);
    return {
      async acquire(name, ttl) {
        const token = randomBytes(16).toString('base64url');
        await lock.acquire(name, token, ttl);
        return { release: () => lock.release(name, token) };
      },
      close: async () => lock.close(),
    };
  }
  const c: ContenderClient = await byId(id).connect(url);
  return { acquire: (name, ttl) => c.acquire(name, { ttl }), close: () => c.close() };
}

/** The handoff scenario's loop, recording each stage. */
async function handoff(
  id: string,
  name: string,
  ttl: number,
  hold: number,
  holdMax: number,
): Promise<StagesRun> {
  const lock = locks.get(id);
  if (lock === undefined) throw new Error(`${id} not initialised in worker ${me}`);
  stopping = false;
  probe.attemptTimes.length = 0;
  const run: StagesRun = { acquisitions: [], releases: [], attempts: probe.attemptTimes };
  while (!stopping) {
    probe.attempt = undefined;
    probe.grant = undefined;
    const lease = await lock.acquire(name, ttl);
    const t = now();
    send({ event: 'acq', worker: me, t });
    const a = probe.attempt as Attempt | undefined;
    const g = probe.grant as GrantRecord | undefined;
    run.acquisitions.push({
      t,
      ...(g === undefined ? {} : { grant: { ...g } }),
      attempt: {
        written: a?.written ?? Number.NaN,
        ...(a?.reply === undefined ? {} : { reply: a.reply }),
        ...(a?.acquiredEvent === undefined ? {} : { acquiredEvent: a.acquiredEvent }),
        ...(a?.push === undefined ? {} : { pushRead: a.push.read }),
        ...(a?.push?.scheduled === undefined ? {} : { scheduled: a.push.scheduled }),
        ...(a?.push?.delivered === undefined ? {} : { delivered: a.push.delivered }),
      },
    });
    if (!stopping) await sleep(hold + Math.random() * (holdMax - hold));
    const released = now();
    const stepAside = new Promise<void>((resolve) => {
      otherHolder = (notice) => {
        if (notice.by !== me && notice.t > released) resolve();
      };
      if (stopping) resolve();
    });
    send({ event: 'rel', worker: me, t: released });
    probe.expectRelease();
    await lease.release();
    run.releases.push({
      t: released,
      ...(probe.releaseWritten === undefined ? {} : { written: probe.releaseWritten }),
    });
    await stepAside;
    otherHolder = undefined;
  }
  return run;
}

async function handle(request: Request): Promise<unknown> {
  switch (request.cmd) {
    case 'init':
      if (!locks.has(request.contender))
        locks.set(request.contender, await open(request.contender, request.url));
      return null;
    case 'close': {
      const lock = locks.get(request.contender);
      locks.delete(request.contender);
      await lock?.close();
      return null;
    }
    case 'clock':
      return now();
    case 'handoff':
      return handoff(
        request.contender,
        request.name,
        request.ttl,
        request.hold,
        request.holdMax ?? request.hold,
      );
    default:
      throw new Error(`bench/stages/worker.ts does not handle ${request.cmd}`);
  }
}

process.on('message', (message: Request | Notice) => {
  if ('notice' in message) {
    if (message.notice === 'held') otherHolder?.(message);
    else if (message.notice === 'stop') {
      stopping = true;
      otherHolder?.({ by: -1, t: Number.POSITIVE_INFINITY });
    } else if (message.notice === 'exit') process.exit(0);
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
