import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from './masters.ts';
import { until } from './poll.ts';
import { freePort } from './ports.ts';
import { reapOnExit } from './reaper.ts';
import { type RedisServer, waitForPing } from './redis-server.ts';
import { command, info, pairs } from './resp.ts';
import { redisServerBinary } from './server-binary.ts';

export interface SentinelSetOptions {
  /** @default 'mymaster' */
  masterName?: string;
  /** How long the set may take to settle (sentinels discover each other every 2 s). @default 20000 */
  timeout?: number;
}

interface Sentinel {
  port: number;
  child: ChildProcess;
  log: string;
}

/**
 * One master, one replica and three sentinels (quorum 2, down-after 1 s, failover-timeout 3 s),
 * every process on a free port, config files in a temp dir that `stop()` removes.
 */
export class SentinelSet {
  readonly masterName: string;
  readonly #dir: string;
  readonly #servers: RedisServer[] = [];
  readonly #sentinels: Sentinel[] = [];
  readonly #dead = new Set<RedisServer>();
  #stopped = false;

  private constructor(dir: string, masterName: string) {
    this.#dir = dir;
    this.masterName = masterName;
  }

  static async start(options: SentinelSetOptions = {}): Promise<SentinelSet> {
    const dir = await mkdtemp(join(tmpdir(), 'leasehold-sentinel-'));
    const set = new SentinelSet(dir, options.masterName ?? 'mymaster');
    try {
      await set.#start(options.timeout ?? 20_000);
      return set;
    } catch (error) {
      await set.stop();
      throw error;
    }
  }

  async #start(timeout: number): Promise<void> {
    const common = ['--repl-diskless-sync-delay', '0', '--dir', this.#dir];
    const master = await startServer({ args: common });
    this.#servers.push(master);
    const replica = await startServer({ args: [...common, '--replicaof', '127.0.0.1', String(master.port)] });
    this.#servers.push(replica);
    await until(
      'the replica to sync',
      async () => (await info(replica.port, 'replication'))['master_link_status'] === 'up',
      {
        timeout,
      },
    );
    await Promise.all([0, 1, 2].map(() => this.#startSentinel(master.port)));
    await until('every sentinel to know the replica and the other sentinels', () => this.#settled(replica), {
      timeout,
      interval: 100,
    });
  }

  async #startSentinel(masterPort: number, attempts = 3): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const file = join(this.#dir, `sentinel-${port}.conf`);
      const name = this.masterName;
      await writeFile(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          'protected-mode no',
          'daemonize no',
          `dir ${this.#dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 3000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      // The config file must come first: redis-server only treats argv[1] as one.
      const child = spawn(redisServerBinary(), [file, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
      reapOnExit(child);
      const sentinel: Sentinel = { port, child, log: '' };
      this.#sentinels.push(sentinel);
      const append = (chunk: Buffer) => {
        sentinel.log = (sentinel.log + chunk.toString()).slice(-20_000);
      };
      child.stdout?.on('data', append);
      child.stderr?.on('data', append);
      const failed = once(child, 'exit').then(([code]) => {
        throw new Error(`sentinel on port ${port} exited with ${code}:\n${sentinel.log}`);
      });
      failed.catch(() => {});
      try {
        await Promise.race([waitForPing(port, 10_000), failed]);
        return;
      } catch (error) {
        await stopChild(child);
        this.#sentinels.splice(this.#sentinels.indexOf(sentinel), 1);
        if (!/Address already in use/i.test(String(error)) || attempt >= attempts) throw error;
      }
    }
  }

  async #settled(replica: RedisServer): Promise<boolean> {
    for (const sentinel of this.#sentinels) {
      const master = pairs(await command(sentinel.port, ['SENTINEL', 'MASTER', this.masterName]));
      if (master['flags'] !== 'master' || master['num-other-sentinels'] !== '2') return false;
      const replicas = await command(sentinel.port, ['SENTINEL', 'REPLICAS', this.masterName]);
      const known = (Array.isArray(replicas) ? replicas : []).map(pairs);
      const ok = known.some(
        (entry) =>
          entry['port'] === String(replica.port) &&
          entry['flags'] === 'slave' &&
          entry['master-link-status'] === 'ok',
      );
      if (!ok) return false;
    }
    return true;
  }

  get sentinels(): { port: number; url: string }[] {
    return this.#sentinels.map(({ port }) => ({ port, url: `redis://127.0.0.1:${port}` }));
  }

  get sentinelUrls(): string[] {
    return this.sentinels.map(({ url }) => url);
  }

  /** Sentinels in the shape `createSentinel({ sentinelRootNodes })` and ioredis take. */
  get sentinelRootNodes(): { host: string; port: number }[] {
    return this.#sentinels.map(({ port }) => ({ host: '127.0.0.1', port }));
  }

  /** The data nodes: the initial master, then the initial replica. */
  get servers(): readonly RedisServer[] {
    return this.#servers;
  }

  /** The master's port as the first sentinel reports it (SENTINEL GET-MASTER-ADDR-BY-NAME). */
  async masterPort(sentinel = 0): Promise<number> {
    const port = this.#sentinels[sentinel]?.port;
    if (port === undefined) throw new Error(`no sentinel #${sentinel}`);
    const reply = await command(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.masterName]);
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected reply ${String(reply)}`);
    return Number(reply[1]);
  }

  /** The data node the sentinels currently report as master. */
  async master(): Promise<RedisServer> {
    const port = await this.masterPort();
    const server = this.#servers.find((candidate) => candidate.port === port);
    if (server === undefined) throw new Error(`sentinels report an unknown master port ${port}`);
    return server;
  }

  /**
   * SIGKILLs the current master and waits until every sentinel reports the replica as master and
   * the replica answers ROLE as master. Returns the new master.
   */
  async failover(timeout = 20_000): Promise<RedisServer> {
    const old = await this.master();
    const replica = this.#servers.find((server) => server !== old && !this.#dead.has(server));
    if (replica === undefined) throw new Error('no live replica to promote');
    await old.kill('SIGKILL');
    this.#dead.add(old);
    await until(
      `the sentinels to promote port ${replica.port}`,
      async () => {
        for (let i = 0; i < this.#sentinels.length; i++) {
          if ((await this.masterPort(i)) !== replica.port) return false;
        }
        const role = await command(replica.port, ['ROLE']);
        return Array.isArray(role) && role[0] === 'master';
      },
      { timeout, interval: 100 },
    );
    return replica;
  }

  /** Kills every process by its own pid and removes the temp dir; safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all([
      ...this.#sentinels.map(({ child }) => stopChild(child)),
      ...this.#servers.map((server) => server.stop()),
    ]);
    await rm(this.#dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
