// The waiters curve of the scale scenario: W callers wait for ONE lock name, spread over P worker
// processes; callers take the lock in turn (bench/workers/herd.ts). Per cell: the idle load while
// one caller holds and the others wait, then handoffs, each bracketed by INFO snapshots (release
// sent -> next holder + settle).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from '../contenders/types.ts';
import { type Bench, type Delta, delta } from '../lib/redis.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { Worker } from '../lib/workers.ts';
import type { CpuSample, Event, HerdResult, MemorySample } from '../workers/protocol.ts';
import { lockName } from './context.ts';

export interface WaitersSettings {
  waiters: number[];
  processes: number[];
  /** Handoffs per cell (fewer when the cell's handoff phase reaches `handoffCapMs`). */
  handoffs: number;
  handoffCapMs: number;
  /** Time for the waiters to start waiting, before the idle window. */
  settleMs: number;
  idleWindowMs: number;
  /** After the next holder is reported, before the closing INFO: the losers' replies come in. */
  afterMs: number;
  /** After the released caller queues again, before the next release. */
  holdMs: number;
  ttl: number;
  /** How long the waiters get to notice the end of a cell before their processes are replaced. */
  drainCapMs: number;
}

export interface WaitersCell {
  contender: string;
  waiters: number;
  processes: number;
  /** Callers per process (the first process has one more: the first holder). */
  split: number[];
  idle: {
    commandsPerSecond: number;
    readsPerSecond: number;
    redisCpuPercent: number;
    waiterCpuPercent: number;
  };
  /** JS heap (plus array buffers) the waiting processes grew by while the callers settled, per caller. */
  heapPerWaiter: number;
  gap: Summary;
  handoffs: number;
  /** The handoff phase hit its wall-clock cap before `handoffs` were done. */
  capped: boolean;
  /** Per handoff, release sent -> next holder + `afterMs`: every command, script calls, SET calls. */
  perHandoff: { commands: number; scripts: number; sets: number; reads: number };
  /**
   * Acquire attempts per handoff: the acquire command's calls in the window (script calls less
   * the one release for a library that acquires by script, SET calls for one that acquires by SET NX).
   */
  attempts: number;
  failed: string[];
  /** The waiters did not all stop within drainCapMs; their processes were replaced. */
  respawned: number;
}

/** The peers whose acquire is a plain SET NX (the others acquire by script): what counts as an attempt. */
const acquiresBySet = /^(redis-semaphore|redlock-universal)/;

/** W callers over P processes, the remainder to the first ones. */
export function split(waiters: number, processes: number): number[] {
  const each = Math.floor(waiters / processes);
  return Array.from({ length: processes }, (_, i) => each + (i < waiters % processes ? 1 : 0));
}

/** The cells run: W >= P only (a process without a waiter would not be "spread over P"). */
export function cells(settings: WaitersSettings): { waiters: number; processes: number }[] {
  const out = [];
  for (const waiters of settings.waiters)
    for (const processes of settings.processes) if (waiters >= processes) out.push({ waiters, processes });
  return out;
}

/** Events from the herd, one promise per next acquisition / release. */
class Feed {
  readonly acqs: { worker: number; t: number }[] = [];
  readonly rels: { worker: number; t: number }[] = [];
  #wake: (() => void) | undefined;
  push(event: Event): void {
    if (event.event === 'herd-acq') this.acqs.push(event);
    else if (event.event === 'herd-rel') this.rels.push(event);
    else return;
    this.#wake?.();
  }
  /** Waits until `test` holds or `until` (performance.now()) passes; resolves whether it held. */
  async until(test: () => boolean, until: number): Promise<boolean> {
    while (!test()) {
      const left = until - performance.now();
      if (left <= 0) return false;
      const woken = new AbortController();
      this.#wake = () => woken.abort();
      await sleep(left, undefined, { signal: woken.signal }).catch(() => {});
      this.#wake = undefined;
    }
    return true;
  }
}

export async function waitersCell(
  bench: Bench,
  pool: Worker[],
  contender: Contender,
  waiters: number,
  processes: number,
  settings: WaitersSettings,
  log: (line: string) => void,
): Promise<WaitersCell> {
  const workers = pool.slice(0, processes);
  const parts = split(waiters, processes);
  const name = lockName('scaling', contender.id, waiters, processes);
  const feed = new Feed();
  const offs = workers.map((w) => w.on((event) => feed.push(event)));
  const calls: Promise<HerdResult>[] = [];
  const failed: string[] = [];
  let respawned = 0;
  let result: WaitersCell | undefined;
  try {
    const herd = (w: Worker, i: number, first: boolean) =>
      w.call<HerdResult>({
        cmd: 'herd',
        contender: contender.id,
        name,
        ttl: settings.ttl,
        callers: parts[i]!,
        first,
      });
    const heap = async () => {
      const samples = await Promise.all(workers.map((w) => w.call<MemorySample>({ cmd: 'mem' })));
      return samples.reduce((sum, m) => sum + m.heapUsed + m.arrayBuffers, 0);
    };
    const heapBefore = await heap();
    calls.push(herd(workers[0]!, 0, true));
    if (!(await feed.until(() => feed.acqs.length > 0, performance.now() + 10_000)))
      throw new Error('the first holder did not acquire within 10 s');
    calls.push(...workers.slice(1).map((w, i) => herd(w, i + 1, false)));
    for (const call of calls) call.catch(() => {});
    await sleep(settings.settleMs);
    const heapPerWaiter = ((await heap()) - heapBefore) / (waiters + 1);

    const cpu0 = await Promise.all(workers.map((w) => w.call<CpuSample>({ cmd: 'cpu' })));
    const a = await bench.counters();
    await sleep(settings.idleWindowMs);
    const b = await bench.counters();
    const cpu1 = await Promise.all(workers.map((w) => w.call<CpuSample>({ cmd: 'cpu' })));
    const idleDelta = delta(a, b);
    const waiterCpu = workers.reduce((sum, _, i) => sum + (cpu1[i]!.cpu - cpu0[i]!.cpu), 0);
    const idle = {
      commandsPerSecond: idleDelta.commands / (idleDelta.ms / 1000),
      readsPerSecond: idleDelta.reads / (idleDelta.ms / 1000),
      redisCpuPercent: (idleDelta.cpuMs / idleDelta.ms) * 100,
      waiterCpuPercent: (waiterCpu / idleDelta.ms) * 100,
    };

    const gaps: number[] = [];
    const windows: Delta[] = [];
    const capAt = performance.now() + settings.handoffCapMs;
    let capped = false;
    for (let k = 0; k < settings.handoffs; k++) {
      const holder = feed.acqs[feed.acqs.length - 1]!;
      const seenAcqs = feed.acqs.length;
      const seenRels = feed.rels.length;
      const before = await bench.counters();
      pool.find((w) => w.index === holder.worker)?.notify({ notice: 'herd-release' });
      const ok = await feed.until(() => feed.acqs.length > seenAcqs && feed.rels.length > seenRels, capAt);
      if (!ok) {
        capped = true;
        break;
      }
      await sleep(settings.afterMs);
      const after = await bench.counters();
      const acq = feed.acqs[seenAcqs]!;
      const rel = feed.rels[seenRels]!;
      gaps.push(acq.t - rel.t);
      windows.push(delta(before, after));
      for (const w of workers) w.notify({ notice: 'herd-held', t: acq.t });
      await sleep(settings.holdMs);
      if (performance.now() > capAt && k + 1 < settings.handoffs) {
        capped = true;
        break;
      }
    }
    const n = Math.max(1, windows.length);
    const sum = (f: (d: Delta) => number) => windows.reduce((acc, d) => acc + f(d), 0) / n;
    const perHandoff = {
      commands: sum((d) => d.commands),
      scripts: sum((d) => d.scripts),
      sets: sum((d) => d.sets),
      reads: sum((d) => d.reads),
    };
    const bySet = acquiresBySet.test(contender.id);
    const attempts = windows.length === 0 ? Number.NaN : bySet ? perHandoff.sets : perHandoff.scripts - 1;
    result = {
      contender: contender.id,
      waiters,
      processes,
      split: parts.map((p, i) => p + (i === 0 ? 1 : 0)),
      heapPerWaiter,
      idle,
      gap: summarize(gaps),
      handoffs: gaps.length,
      capped,
      perHandoff,
      attempts,
      failed,
      respawned: 0,
    };
  } finally {
    for (const w of workers) w.notify({ notice: 'herd-stop' });
    const drained = await Promise.race([
      Promise.allSettled(calls).then((results) => {
        for (const r of results)
          if (r.status === 'fulfilled') failed.push(...r.value.failed);
          else failed.push(String(r.reason));
        return true;
      }),
      sleep(settings.drainCapMs).then(() => false),
    ]);
    for (const off of offs) off();
    if (!drained) {
      // Some library's retry budget outlives the cap: replace the processes (their callers would
      // otherwise keep polling into the next cell's windows).
      for (let i = 0; i < workers.length; i++) {
        const old = workers[i]!;
        await old.kill();
        pool[i] = await Worker.spawn(old.index, { gc: true });
        respawned++;
      }
      log(
        `    (waiters did not stop within ${settings.drainCapMs} ms: ${respawned} worker processes replaced)`,
      );
    }
  }
  result.respawned = respawned;
  return result;
}
