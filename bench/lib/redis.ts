import type { Redis } from 'ioredis';
import { RedisServer } from '../../test/harness/redis-server.ts';
import type { Contender } from '../contenders/types.ts';
import { ioredisClient } from '../contenders/util.ts';
import { now } from './stats.ts';

/** Server counters from one INFO call. */
export interface Counters {
  /** Local timestamp (ms) halfway through the INFO round trip. */
  t: number;
  /** Commands as INFO counts them: a script call plus every command the script runs. */
  commands: number;
  /** read() calls on client sockets: about one per round trip, however many commands it carried. */
  reads: number;
  /** Bytes Redis read from clients. */
  netInput: number;
  /** used_cpu_user + used_cpu_sys, ms. */
  cpu: number;
  usedMemory: number;
  /** Calls and microseconds per command name, lower case (`evalsha`, `set`, ...). */
  calls: Record<string, number>;
  usec: Record<string, number>;
}

/** Script calls (EVAL, EVALSHA, FCALL and their _ro forms). */
const SCRIPTS = ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'];

/** What happened between two snapshots; the INFO call closing the window is not counted. */
export interface Delta {
  ms: number;
  commands: number;
  reads: number;
  cpuMs: number;
  scripts: number;
  /** Microseconds Redis spent in script calls. */
  scriptUsec: number;
  /** Plain SET calls (a polling peer's acquire attempt is a SET NX). */
  sets: number;
  /** Bytes Redis read from clients. */
  inputBytes: number;
}

export function delta(a: Counters, b: Counters): Delta {
  const diff = (map: 'calls' | 'usec', names: string[]) =>
    names.reduce((sum, n) => sum + (b[map][n] ?? 0) - (a[map][n] ?? 0), 0);
  return {
    ms: b.t - a.t,
    commands: b.commands - a.commands - 1,
    reads: b.reads - a.reads - 1,
    cpuMs: b.cpu - a.cpu,
    scripts: diff('calls', SCRIPTS),
    scriptUsec: diff('usec', SCRIPTS),
    sets: diff('calls', ['set']),
    inputBytes: b.netInput - a.netInput,
  };
}

export interface Rates {
  seconds: number;
  /** Commands per second as INFO counts them (Counters.commands), less the INFO closing the window. */
  commandsPerSecond: number;
  /** Script calls (EVAL, EVALSHA, FCALL) per second. */
  scriptsPerSecond: number;
  readsPerSecond: number;
  /** Bytes per second Redis read from clients. */
  inputBytesPerSecond: number;
  /** Redis main-thread CPU, percent of one core. */
  cpuPercent: number;
}

/**
 * The keys that carry the lock's expiry: the contender's own key when it documents one, else
 * every key whose name contains the lock name and that has a TTL (leasehold's key layout is internal).
 */
export async function lockKeys(admin: Redis, contender: Contender, name: string): Promise<string[]> {
  if (contender.keyOf !== undefined) return [contender.keyOf(name)];
  const pattern = `*${name.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
  const keys = (await admin.keys(pattern)).sort();
  const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
  return keys.filter((_, i) => (ttls[i] ?? -1) > 0);
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

  async counters(): Promise<Counters> {
    const before = now();
    const text = (await this.admin.call('INFO', 'stats', 'cpu', 'memory', 'commandstats')) as string;
    const t = (before + now()) / 2;
    const field = (name: string): number => {
      const match = new RegExp(`^${name}:(.*)$`, 'm').exec(text);
      return match === null ? Number.NaN : Number(match[1]);
    };
    const calls: Record<string, number> = {};
    const usec: Record<string, number> = {};
    for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      calls[m[1]!] = Number(m[2]);
      usec[m[1]!] = Number(m[3]);
    }
    return {
      t,
      commands: field('total_commands_processed'),
      reads: field('total_reads_processed'),
      netInput: field('total_net_input_bytes'),
      cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1000,
      usedMemory: field('used_memory'),
      calls,
      usec,
    };
  }

  /** Rates between two counter snapshots (the later INFO call counts itself once). */
  static rates(a: Counters, b: Counters): Rates {
    const d = delta(a, b);
    const seconds = d.ms / 1000;
    return {
      seconds,
      commandsPerSecond: d.commands / seconds,
      scriptsPerSecond: d.scripts / seconds,
      readsPerSecond: d.reads / seconds,
      inputBytesPerSecond: d.inputBytes / seconds,
      cpuPercent: (d.cpuMs / d.ms) * 100,
    };
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

  /** "Redis 8.6.3" or "Valkey 9.1.2" (Valkey reports redis_version 7.2.4 for compatibility). */
  async product(): Promise<string> {
    const text = (await this.admin.info('server')) as string;
    const valkey = /^valkey_version:(\S+)/m.exec(text)?.[1];
    return valkey !== undefined
      ? `Valkey ${valkey}`
      : `Redis ${/^redis_version:(\S+)/m.exec(text)?.[1] ?? 'unknown'}`;
  }

  async stop(): Promise<void> {
    this.admin.disconnect();
    await this.server.stop();
  }
}
