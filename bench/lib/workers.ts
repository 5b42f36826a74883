import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { reapOnExit } from '../../test/harness/reaper.ts';
import type { Event, HoldResult, Notice, Request, WaitResult } from '../workers/protocol.ts';
import { now } from './stats.ts';

const script = fileURLToPath(new URL('../workers/worker.ts', import.meta.url));

type Body = Request extends infer R ? (R extends Request ? Omit<R, 'id'> : never) : never;

/** Parent side of one worker process (bench/workers/worker.ts). */
export class Worker {
  readonly index: number;
  readonly #child: ChildProcess;
  readonly #pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  readonly #listeners = new Set<(event: Event) => void>();
  #next = 1;
  #exited = false;

  private constructor(index: number, child: ChildProcess) {
    this.index = index;
    this.#child = child;
    child.on('message', (message: { id?: number; ok?: boolean; value?: unknown; error?: string } & Event) => {
      if (message.id !== undefined) {
        const waiter = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.ok) waiter?.resolve(message.value);
        else waiter?.reject(new Error(`worker ${index}: ${message.error}`));
        return;
      }
      for (const listener of this.#listeners) listener(message);
    });
    child.once('exit', (code, signal) => {
      this.#exited = true;
      for (const waiter of this.#pending.values()) {
        waiter.reject(new Error(`worker ${index} exited (${signal ?? code}) with a request pending`));
      }
      this.#pending.clear();
    });
  }

  /**
   * Forks a worker and waits for its `ready`; `gc` exposes global.gc for memory figures, `execArgv`
   * adds Node options (--cpu-prof), `env` variables (BENCH_STAGES).
   */
  static async spawn(
    index: number,
    options: { gc?: boolean; execArgv?: string[]; env?: Record<string, string> } = {},
  ): Promise<Worker> {
    const execArgv = ['--import', 'tsx', ...(options.gc ? ['--expose-gc'] : []), ...(options.execArgv ?? [])];
    const child = fork(script, [], {
      execArgv,
      env: { ...process.env, ...options.env, BENCH_WORKER: String(index) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    reapOnExit(child);
    const worker = new Worker(index, child);
    await new Promise<void>((resolve, reject) => {
      const off = worker.on((event) => {
        if (event.event !== 'ready') return;
        off();
        resolve();
      });
      child.once('exit', (code) => reject(new Error(`worker ${index} exited with ${code} before ready`)));
    });
    return worker;
  }

  call<T>(body: Body): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#child.send({ ...body, id } as Request);
    });
  }

  /** The worker takes `names` and keeps them: `concurrency` acquisitions in flight, `gap` ms apart. */
  hold(contender: string, names: string[], ttl: number, gap: number, concurrency: number) {
    return this.call<HoldResult>({ cmd: 'hold', contender, names, ttl, gap, concurrency });
  }

  /**
   * One caller per name waits in the worker, each releasing once it acquires; the `abort` notice
   * with `tag` gives up the waits left.
   */
  wait(contender: string, names: string[], ttl: number, tag: string): Promise<WaitResult> {
    return this.call<WaitResult>({ cmd: 'wait', contender, names, ttl, tag, release: true });
  }

  notify(notice: Notice): void {
    if (!this.#exited && this.#child.connected) this.#child.send(notice);
  }

  on(listener: (event: Event) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Offset of this worker's clock from ours, ms (worker minus parent), from the IPC round trip with
   * the smallest delay; `error` bounds it (half that round trip).
   */
  async clockOffset(samples = 20): Promise<{ offset: number; error: number }> {
    let best = { offset: Number.NaN, error: Number.POSITIVE_INFINITY };
    for (let i = 0; i < samples; i++) {
      const sent = now();
      const theirs = await this.call<number>({ cmd: 'clock' });
      const back = now();
      const error = (back - sent) / 2;
      if (error < best.error) best = { offset: theirs - (sent + back) / 2, error };
    }
    return best;
  }

  /** SIGKILL this worker (its own pid) and wait until it is gone; resolves the exit time. */
  async kill(): Promise<number> {
    if (this.#exited) return now();
    const exited = once(this.#child, 'exit');
    this.#child.kill('SIGKILL');
    await exited;
    return now();
  }

  /** Asks the worker to exit; SIGKILL after `grace` ms. */
  async stop(grace = 2_000): Promise<void> {
    if (this.#exited) return;
    const exited = once(this.#child, 'exit');
    this.notify({ notice: 'exit' });
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), grace);
    await exited;
    clearTimeout(timer);
  }
}
