import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.ts';
import { reapOnExit } from './reaper.ts';
import { redisServerBinary } from './server-binary.ts';

/** Options for one redis-server process that a test owns. */
export interface RedisServerOptions {
  /** Extra `--flag value` pairs, e.g. `['--hz', '100']`. */
  args?: string[];
  /** Port to listen on; a free one when omitted (kept across restarts). */
  port?: number;
  /** Extra environment for the process, e.g. a clock shim's (test/harness/fake-clock.ts). */
  env?: NodeJS.ProcessEnv;
}

/**
 * One redis-server process started by a test. It is stopped only through its own pid, never
 * by name, so a test can never touch a Redis it did not start (for example the shared one on 6379).
 */
export class RedisServer {
  readonly port: number;
  readonly #args: string[];
  readonly #env: NodeJS.ProcessEnv | undefined;
  #child: ChildProcess | undefined;
  #log = '';
  /**
   * Its own working directory. Without one every server shared the checkout: a replica's full
   * sync wrote dump.rdb there, and each server started or restarted later loaded it (not empty;
   * or, written by a newer line, "Can't handle RDB format version 11" and no server at all).
   */
  readonly #dir = mkdtempSync(join(tmpdir(), 'leasehold-redis-'));

  private constructor(port: number, args: string[], env: NodeJS.ProcessEnv | undefined) {
    this.port = port;
    this.#args = args;
    this.#env = env;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(options.port ?? (await freePort()), options.args ?? [], options.env);
    await server.#spawn();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Output of the current process, for failure messages. */
  get log(): string {
    return this.#log;
  }

  async #spawn(): Promise<void> {
    // Fresh and empty: what a replica synced before a restart is not loaded again.
    rmSync(join(this.#dir, 'dump.rdb'), { force: true });
    const args = [
      '--dir',
      this.#dir,
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--protected-mode',
      'no',
      ...this.#args,
    ];
    this.#log = '';
    const child = spawn(redisServerBinary(), args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(this.#env === undefined ? {} : { env: { ...process.env, ...this.#env } }),
    });
    this.#child = child;
    reapOnExit(child);
    const append = (chunk: Buffer) => {
      this.#log = (this.#log + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    const failed = once(child, 'exit').then(([code]) => {
      throw new Error(`redis-server on port ${this.port} exited with ${code}:\n${this.#log}`);
    });
    failed.catch(() => {});
    await Promise.race([waitForPing(this.port, 10_000), failed]);
  }

  /** Sends a signal to this server's own pid (SIGSTOP / SIGCONT pause and resume it). */
  signal(signal: NodeJS.Signals): void {
    if (this.#child?.pid !== undefined && this.#child.exitCode === null) this.#child.kill(signal);
  }

  /** Kills the process (SIGKILL by default) and waits until it is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    if (signal !== 'SIGKILL') child.kill('SIGCONT');
    child.kill(signal);
    await exited;
  }

  /** Starts a fresh, empty process on the same port (after kill()). */
  async restart(): Promise<void> {
    await this.kill();
    await this.#spawn();
  }

  async stop(): Promise<void> {
    await this.kill('SIGKILL');
    rmSync(this.#dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** Resolves once a raw PING on the port answers PONG. */
export async function waitForPing(port: number, timeout: number): Promise<void> {
  const deadline = Date.now() + timeout;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await ping(port);
      return;
    } catch (error) {
      lastError = error;
      await sleep(20);
    }
  }
  throw new Error(`redis on port ${port} did not answer PING within ${timeout} ms: ${String(lastError)}`);
}

function ping(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.setTimeout(1_000);
    let data = '';
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      if (data.includes('\r\n')) {
        socket.destroy();
        if (data.startsWith('+PONG')) resolve();
        else reject(new Error(`unexpected reply ${data.trim()}`));
      }
    });
    socket.on('timeout', () => {
      socket.destroy();
      reject(new Error('timeout'));
    });
    socket.on('error', reject);
    // A server that accepts and then closes (starting up, or being killed: a port another file's
    // server just gave up) sends neither data nor an error: without this the PING, and the
    // before() hook awaiting it, waited forever (hooks have no timeout). Settled promises ignore it.
    socket.on('close', () => reject(new Error('closed before answering PING')));
  });
}
