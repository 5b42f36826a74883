// PostgreSQL servers of a test's own, for the faults that need one to stop, crash, restart or
// serve as a standby (the machine's own server on 5432 is never touched), and PgBouncer in front
// of one. Each runs as the `postgres` user when the tests run as root (PostgreSQL refuses root),
// in a process group of its own, so that a signal reaches the postmaster and every backend, and
// is stopped by its pid only.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './ports.ts';
import { reapOnExit } from './reaper.ts';

/** The newest PostgreSQL server binaries of Debian's layout (/usr/lib/postgresql/<major>/bin). */
export function pgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((d) => existsSync(join(root, d, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? undefined : join(root, majors[0], 'bin');
}

/** Why this machine cannot start PostgreSQL servers of its own, or undefined when it can. */
export function pgServerMissing(): string | undefined {
  return pgBin() === undefined ? 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin' : undefined;
}

/** The pids whose parent is `pid` (from /proc: a server's backends and workers). */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** uid/gid to run as: the postgres user's when we are root. */
function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

export class PgServer {
  readonly port: number;
  readonly dir: string;
  readonly #env: NodeJS.ProcessEnv | undefined;
  #child: ChildProcess | undefined;

  private constructor(port: number, dir: string, env: NodeJS.ProcessEnv | undefined) {
    this.port = port;
    this.dir = dir;
    this.#env = env;
  }

  /** URL of database `db` (default: the `leasehold` database created at start). */
  url(db = 'leasehold', port = this.port): string {
    return `postgres://postgres@127.0.0.1:${port}/${db}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * initdb, start, create database `leasehold`. `standby`: starts in recovery
   * (pg_is_in_recovery()). `env`: extra environment for the server (not initdb), e.g. a clock
   * shim's (test/harness/fake-clock.ts; its directory must be readable by the postgres user).
   */
  static async start(options: { standby?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<PgServer> {
    const bin = pgBin();
    if (bin === undefined) throw new Error(pgServerMissing());
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-pg-'));
    const who = runAs();
    if (who.uid !== undefined) chownSync(dir, who.uid, who.gid!);
    const data = join(dir, 'data');
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '--locale=C', '-E', 'UTF8', '--no-sync'],
      { ...who, encoding: 'utf8' },
    );
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
    const server = new PgServer(await freePort(), dir, options.env);
    if (!options.standby) {
      await server.#spawn();
      const admin = new pg.Client({ connectionString: server.url('postgres') });
      await admin.connect();
      await admin.query('CREATE DATABASE leasehold');
      await admin.end();
    } else {
      writeFileSync(join(data, 'standby.signal'), '');
      if (who.uid !== undefined) chownSync(join(data, 'standby.signal'), who.uid, who.gid!);
      await server.#spawn();
    }
    return server;
  }

  async #spawn(): Promise<void> {
    const child = spawn(
      join(pgBin()!, 'postgres'),
      [
        '-D',
        join(this.dir, 'data'),
        '-p',
        String(this.port),
        '-k',
        this.dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'max_connections=200',
      ],
      {
        ...runAs(),
        detached: true,
        stdio: 'ignore',
        ...(this.#env === undefined ? {} : { env: { ...process.env, ...this.#env } }),
      },
    );
    this.#child = child;
    reapOnExit(child);
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres on ${this.port} exited with ${child.exitCode}`);
      const client = new pg.Client({ connectionString: this.url('postgres') });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.end();
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(50);
      }
    }
  }

  /**
   * Signals the postmaster and every process it forked (backends and workers; each is a session
   * leader of its own, so the postmaster's process group does not reach them): SIGSTOP / SIGCONT
   * stall and resume the whole server. The postmaster is stopped first, so it forks no new one.
   */
  signal(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined || this.#child?.exitCode !== null || this.#child.signalCode !== null) return;
    const first = signal === 'SIGCONT' ? children(pid) : [pid];
    const then = signal === 'SIGCONT' ? [pid] : children(pid);
    for (const target of [...first, ...then]) {
      try {
        process.kill(target, signal);
      } catch {
        // exited meanwhile
      }
    }
  }

  /** SIGKILLs the whole server (a crash) and waits until the postmaster is gone. */
  async crash(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    const forked = children(child.pid!);
    process.kill(child.pid!, 'SIGKILL');
    // A SIGKILLed postmaster's backends live on until they notice: kill them too, as a crash of
    // the machine would, so that none answers after the "crash".
    for (const pid of forked) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    await exited;
    await sleep(50);
  }

  /** A crash and a start on the same port and data: PostgreSQL recovers from its WAL. */
  async restart(): Promise<void> {
    await this.crash();
    await this.#spawn();
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT');
    await this.crash();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Debian installs pgbouncer in /usr/sbin, which a non-root PATH lacks. */
const bouncerBin = (): string =>
  spawnSync('pgbouncer', ['--version']).status === 0 ? 'pgbouncer' : '/usr/sbin/pgbouncer';

/** PgBouncer in front of a server, in transaction mode, as the postgres user. */
export class PgBouncer {
  readonly port: number;
  readonly #child: ChildProcess;
  readonly #dir: string;

  private constructor(port: number, child: ChildProcess, dir: string) {
    this.port = port;
    this.#child = child;
    this.#dir = dir;
  }

  static missing(): string | undefined {
    return spawnSync(bouncerBin(), ['--version']).status === 0
      ? undefined
      : 'no pgbouncer on PATH or in /usr/sbin (apt-get install pgbouncer; .ci/run installs it)';
  }

  url(db: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  /** Transaction pooling in front of `targetPort`, every database passed through. */
  static async start(targetPort: number): Promise<PgBouncer> {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-pgbouncer-'));
    const who = runAs();
    const port = await freePort();
    writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
    writeFileSync(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=127.0.0.1 port=${targetPort}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        `unix_socket_dir = ${dir}`,
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'pool_mode = transaction',
        'admin_users = postgres',
        'default_pool_size = 5',
        'ignore_startup_parameters = extra_float_digits',
        '',
      ].join('\n'),
    );
    if (who.uid !== undefined) {
      for (const f of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, f), who.uid, who.gid!);
    }
    const child = spawn(bouncerBin(), [join(dir, 'pgbouncer.ini')], { ...who, stdio: 'ignore' });
    reapOnExit(child);
    const bouncer = new PgBouncer(port, child, dir);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const client = new pg.Client({ connectionString: bouncer.url('pgbouncer') });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.end();
        return bouncer;
      } catch (error) {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}`);
        if (Date.now() > deadline) {
          await bouncer.stop();
          throw error;
        }
        await sleep(50);
      }
    }
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      const exited = once(this.#child, 'exit');
      this.#child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
