import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { reapOnExit } from './reaper.ts';

/** What parent and worker exchange: one JSON object per line. */
export type WorkerMessage = { [key: string]: unknown };

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface WorkerOptions {
  /** Arguments after the file name. */
  args?: string[];
  /** Environment of the child. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Extra node flags after `--import tsx`, e.g. `['--import', skewClockPath]` (see skew-clock.ts). */
  execArgv?: string[];
}

interface Waiter {
  predicate: (message: WorkerMessage) => boolean;
  resolve: (message: WorkerMessage) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * A child Node process running a TypeScript file through tsx, for tests that need a second
 * program: a holder in another process, a process to pause (SIGSTOP) or crash. Messages are
 * newline-delimited JSON objects on the child's stdin/stdout; other stdout lines and stderr are
 * kept in `log`. The child is signalled only through its own pid.
 *
 * @example
 * const worker = await Worker.start(new URL('./fixtures/echo-worker.ts', import.meta.url).pathname);
 * worker.send({ type: 'ping' });
 * await worker.next((message) => message['type'] === 'pong');
 */
export class Worker {
  /** Resolves when the child has exited, however that happened. */
  readonly exited: Promise<WorkerExit>;
  readonly #child: ChildProcess;
  readonly #pid: number;
  readonly #inbox: WorkerMessage[] = [];
  readonly #waiters = new Set<Waiter>();
  /** Called after every log append: `logged()` waiters. */
  readonly #logWatchers = new Set<() => void>();
  #exit: WorkerExit | undefined;
  #log = '';

  private constructor(child: ChildProcess, pid: number) {
    this.#child = child;
    this.#pid = pid;
    const append = (text: string) => {
      this.#log = (this.#log + text).slice(-20_000);
      for (const watcher of this.#logWatchers) watcher();
    };
    child.stderr?.on('data', (chunk: Buffer) => append(chunk.toString()));
    if (child.stdout) {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const message = parseMessage(line);
        if (message === undefined) append(`${line}\n`);
        else this.#deliver(message);
      });
    }
    // A worker killed while the parent writes to it must not crash the test with EPIPE.
    child.stdin?.on('error', () => {});
    // 'close', not 'exit': it comes after the last stdout line, so no message is lost.
    this.exited = new Promise((resolve) => {
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        this.#exit = { code, signal };
        for (const waiter of this.#waiters) {
          clearTimeout(waiter.timer);
          waiter.reject(this.#exited());
        }
        this.#waiters.clear();
        resolve(this.#exit);
      });
    });
  }

  /** Spawns `node --import tsx file ...args` and resolves once the process is running. */
  static async start(file: string, options: WorkerOptions = {}): Promise<Worker> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', ...(options.execArgv ?? []), file, ...(options.args ?? [])],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: options.env ?? process.env,
      },
    );
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    if (child.pid === undefined) throw new Error(`could not spawn a worker for ${file}`);
    reapOnExit(child);
    return new Worker(child, child.pid);
  }

  get pid(): number {
    return this.#pid;
  }

  /** Non-message stdout lines and stderr, for failure messages. */
  get log(): string {
    return this.#log;
  }

  /** Writes one message to the child's stdin. */
  send(message: WorkerMessage): void {
    if (this.#exit !== undefined) throw this.#exited();
    this.#child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  /**
   * Resolves with the first message, already received or still to come, that matches `predicate`
   * and removes it from the inbox. Rejects after `timeout` ms or when the child exits.
   */
  next(predicate: (message: WorkerMessage) => boolean = () => true, timeout = 5_000): Promise<WorkerMessage> {
    const index = this.#inbox.findIndex(predicate);
    if (index !== -1) return Promise.resolve(this.#inbox.splice(index, 1)[0]!);
    if (this.#exit !== undefined) return Promise.reject(this.#exited());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(new Error(`worker ${this.#pid}: no matching message within ${timeout} ms\n${this.#log}`));
        }, timeout),
      };
      this.#waiters.add(waiter);
    });
  }

  /**
   * Resolves once `log` matches `pattern`. The child's stderr and stdout are two pipes, read in
   * whatever order the parent's event loop sees them: a line the child wrote to stderr before a
   * message may reach `log` after the message does, so a test waits for it rather than reading
   * `log` at once.
   */
  logged(pattern: RegExp, timeout = 5_000): Promise<void> {
    if (pattern.test(this.#log)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const watcher = () => {
        if (!pattern.test(this.#log)) return;
        clearTimeout(timer);
        this.#logWatchers.delete(watcher);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#logWatchers.delete(watcher);
        reject(
          new Error(`worker ${this.#pid}: log did not match ${pattern} within ${timeout} ms\n${this.#log}`),
        );
      }, timeout);
      this.#logWatchers.add(watcher);
    });
  }

  /** SIGSTOP: the child stops running (timers, sockets, everything) until `resume()`. */
  pause(): void {
    this.#signal('SIGSTOP');
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    this.#signal('SIGCONT');
  }

  /** Sends `signal` (SIGKILL by default) and resolves once the child has exited; see `pause()`. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<WorkerExit> {
    this.#signal(signal);
    // A stopped process does not act on SIGTERM/SIGINT until it runs again.
    if (signal !== 'SIGKILL') this.#signal('SIGCONT');
    return this.exited;
  }

  /** Kills the child if it still runs (SIGKILL) and waits for its exit. */
  async stop(): Promise<void> {
    this.#child.stdin?.end();
    await this.kill('SIGKILL');
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #signal(signal: NodeJS.Signals): void {
    if (this.#exit === undefined && this.#child.exitCode === null && this.#child.signalCode === null) {
      this.#child.kill(signal);
    }
  }

  #deliver(message: WorkerMessage): void {
    for (const waiter of this.#waiters) {
      if (!waiter.predicate(message)) continue;
      clearTimeout(waiter.timer);
      this.#waiters.delete(waiter);
      waiter.resolve(message);
      return;
    }
    this.#inbox.push(message);
  }

  #exited(): Error {
    const how = this.#exit?.signal ?? `code ${this.#exit?.code}`;
    return new Error(`worker ${this.#pid} exited (${how})\n${this.#log}`);
  }
}

/** The worker's side of the channel, for the file a `Worker` runs. */
export interface ParentChannel {
  send(message: WorkerMessage): void;
  /** Calls `handler` with each message the parent sends. */
  onMessage(handler: (message: WorkerMessage) => void): void;
}

/**
 * Opens the channel to the parent. The worker exits when its stdin closes, which happens when the
 * parent stops it or dies, so no worker outlives its test.
 */
export function parentChannel(): ParentChannel {
  const handlers: ((message: WorkerMessage) => void)[] = [];
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const message = parseMessage(line);
    if (message !== undefined) for (const handler of handlers) handler(message);
  });
  lines.on('close', () => process.exit(0));
  return {
    send: (message) => {
      process.stdout.write(`${JSON.stringify(message)}\n`);
    },
    onMessage: (handler) => {
      handlers.push(handler);
    },
  };
}

function parseMessage(line: string): WorkerMessage | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as WorkerMessage)
      : undefined;
  } catch {
    return undefined;
  }
}
