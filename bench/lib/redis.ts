import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { RedisServer } from '../../test/harness/redis-server.ts';
import type { Contender } from '../contenders/types.ts';
import { ioredisClient } from '../contenders/util.ts';
import { now } from './stats.ts';

const run = promisify(execFile);

/** Server counters from one INFO call. */
export interface Counters {
  /** Local timestamp (ms) halfway through the INFO round trip. */
  t: number;
  commands: number;
  /** read() calls on client sockets: about one per round trip, however many commands it carried. */
  reads: number;
  /** Bytes Redis read from clients. */
  netInput: number;
  /** EVAL / EVALSHA / FCALL calls (each script's own commands count in `commands` too). */
  scripts: number;
  /** used_cpu_user + used_cpu_sys, ms. */
  cpu: number;
  usedMemory: number;
}

export interface Rates {
  seconds: number;
  /**
   * Commands per second as INFO counts them (a script call plus every command the script runs),
   * not counting the INFO call that closes the window.
   */
  commandsPerSecond: number;
  /** Script calls (EVAL, EVALSHA, FCALL) per second. */
  scriptsPerSecond: number;
  readsPerSecond: number;
  /** Bytes per second Redis read from clients. */
  inputBytesPerSecond: number;
  /** Redis main-thread CPU, percent of one core. */
  cpuPercent: number;
}

/** One redis-server owned by a scenario, plus an admin connection for counters and key surgery. */
export class Bench {
  readonly server: RedisServer;
  readonly admin: Redis;

  private constructor(server: RedisServer, admin: Redis) {
    this.server = server;
    this.admin = admin;
  }

  static async start(args: string[] = []): Promise<Bench> {
    const server = await RedisServer.start({ args });
    try {
      return new Bench(server, await ioredisClient(server.url));
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  get url(): string {
    return this.server.url;
  }

  get port(): number {
    return this.server.port;
  }

  async info(section = ''): Promise<Record<string, string>> {
    const text = (await (section === '' ? this.admin.info() : this.admin.info(section))) as string;
    const fields: Record<string, string> = {};
    for (const line of text.split('\r\n')) {
      const at = line.indexOf(':');
      if (at > 0 && !line.startsWith('#')) fields[line.slice(0, at)] = line.slice(at + 1);
    }
    return fields;
  }

  async counters(): Promise<Counters> {
    const before = now();
    const text = (await this.admin.call('INFO', 'stats', 'cpu', 'memory', 'commandstats')) as string;
    const t = (before + now()) / 2;
    const field = (name: string): number => {
      const match = new RegExp(`^${name}:(.*)$`, 'm').exec(text);
      return match === null ? Number.NaN : Number(match[1]);
    };
    return {
      t,
      commands: field('total_commands_processed'),
      reads: field('total_reads_processed'),
      netInput: field('total_net_input_bytes'),
      scripts: [
        ...text.matchAll(/^cmdstat_(?:eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):calls=(\d+)/gm),
      ].reduce((sum, m) => sum + Number(m[1]), 0),
      cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1000,
      usedMemory: field('used_memory'),
    };
  }

  /** Rates between two counter snapshots (the later INFO call counts itself once). */
  static rates(a: Counters, b: Counters): Rates {
    const seconds = (b.t - a.t) / 1000;
    return {
      seconds,
      commandsPerSecond: (b.commands - a.commands - 1) / seconds,
      scriptsPerSecond: (b.scripts - a.scripts) / seconds,
      readsPerSecond: (b.reads - a.reads - 1) / seconds,
      inputBytesPerSecond: (b.netInput - a.netInput) / seconds,
      cpuPercent: ((b.cpu - a.cpu) / (b.t - a.t)) * 100,
    };
  }

  /**
   * The keys that carry the lock's expiry: the contender's own key when it documents one, else
   * every key whose name contains the lock name and that has a TTL (leasehold's key layout is internal).
   */
  async lockKeys(contender: Contender, name: string): Promise<string[]> {
    if (contender.keyOf !== undefined) return [contender.keyOf(name)];
    const pattern = `*${name.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
    const keys = (await this.admin.keys(pattern)).sort();
    const ttls = await Promise.all(keys.map((key) => this.admin.pttl(key)));
    return keys.filter((_, i) => (ttls[i] ?? -1) > 0);
  }

  /** Absolute expiry (local ms clock) of each key, from PTTL taken in one pipeline; NaN when gone. */
  async expiries(keys: readonly string[]): Promise<number[]> {
    const before = now();
    const pipeline = this.admin.pipeline();
    for (const key of keys) pipeline.pttl(key);
    const replies = (await pipeline.exec()) ?? [];
    const t = (before + now()) / 2;
    return replies.map(([error, ttl]) =>
      error === null && typeof ttl === 'number' && ttl >= 0 ? t + ttl : Number.NaN,
    );
  }

  async version(): Promise<string> {
    return (await this.info('server'))['redis_version'] ?? 'unknown';
  }

  /** "Redis 8.6.3" or "Valkey 9.1.2" (Valkey reports redis_version 7.2.4 for compatibility). */
  async product(): Promise<string> {
    const info = await this.info('server');
    const valkey = info['valkey_version'];
    return valkey === undefined ? `Redis ${info['redis_version'] ?? 'unknown'}` : `Valkey ${valkey}`;
  }

  async stop(): Promise<void> {
    this.admin.disconnect();
    await this.server.stop();
  }
}

/** Runs redis-benchmark with CSV output; returns requests/s and p50 latency per test. */
export async function redisBenchmark(
  port: number,
  args: string[],
): Promise<{ test: string; rps: number; p50: number; p99: number }[]> {
  const { stdout } = await run('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '--csv', ...args], {
    maxBuffer: 1 << 20,
  });
  const lines = stdout.trim().split('\n');
  const header = (lines.shift() ?? '').split(',').map((h) => h.replace(/"/g, ''));
  const column = (row: string[], name: string): number => Number(row[header.indexOf(name)] ?? Number.NaN);
  return lines.map((line) => {
    const row = line.split(',').map((cell) => cell.replace(/"/g, ''));
    return {
      test: row[0] ?? '',
      rps: column(row, 'rps'),
      p50: column(row, 'p50_latency_ms'),
      p99: column(row, 'p99_latency_ms'),
    };
  });
}
