import type { Bench } from '../lib/redis.ts';
import { now } from '../lib/stats.ts';

/** One INFO snapshot with per-command counts (`INFO commandstats`) beside the totals. */
export interface Snapshot {
  /** Local ms clock, halfway through the INFO round trip. */
  t: number;
  /** Commands INFO counts in total_commands_processed (a script call plus its own commands). */
  commands: number;
  /** Socket reads: about one per round trip, however many commands it carried. */
  reads: number;
  /** used_cpu_user + used_cpu_sys, ms. */
  cpu: number;
  usedMemory: number;
  /** Calls per command, lower case (`evalsha`, `set`, ...). */
  calls: Record<string, number>;
  /** Microseconds Redis spent per command name (inside a script: counted under the script too). */
  usec: Record<string, number>;
}

export async function snapshot(bench: Bench): Promise<Snapshot> {
  const before = now();
  const text = (await bench.admin.call('INFO', 'stats', 'cpu', 'memory', 'commandstats')) as string;
  const t = (before + now()) / 2;
  const field = (name: string): number => Number(new RegExp(`^${name}:(.*)$`, 'm').exec(text)?.[1] ?? NaN);
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
    cpu: (field('used_cpu_user') + field('used_cpu_sys')) * 1000,
    usedMemory: field('used_memory'),
    calls,
    usec,
  };
}

/** Script calls (EVAL, EVALSHA, FCALL and their _ro forms). */
export const SCRIPTS = ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'];

/** What happened between two snapshots; the INFO call closing the window is not counted. */
export interface Delta {
  ms: number;
  /** Commands as total_commands_processed counts them, less the closing INFO. */
  commands: number;
  reads: number;
  cpuMs: number;
  scripts: number;
  /** Microseconds Redis spent in script calls. */
  scriptUsec: number;
  /** Plain SET calls (a polling peer's acquire attempt is a SET NX). */
  sets: number;
}

export function delta(a: Snapshot, b: Snapshot): Delta {
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
  };
}
