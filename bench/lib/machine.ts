import { execFileSync } from 'node:child_process';
import { cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { redisServerBinary } from '../../test/harness/server-binary.ts';

export interface Machine {
  date: string;
  cpuModel: string;
  cpus: number;
  memoryGiB: number;
  freeMemoryGiB: number;
  os: string;
  node: string;
  redisServer: string;
  loadAverage: number[];
  commit: string;
}

function quiet(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The 1, 5 and 15 minute load averages, to two decimals. */
export const loadAverage = () => loadavg().map((x) => Math.round(x * 100) / 100);

/** What the numbers were measured on. */
export function machine(): Machine {
  const list = cpus();
  const dirty =
    quiet('git', ['status', '--porcelain', '--', 'src']) === '' ? '' : ' (src has uncommitted changes)';
  return {
    date: new Date().toISOString(),
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cpus: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.versions.node,
    redisServer: quiet(redisServerBinary(), ['--version']),
    loadAverage: loadAverage(),
    commit: `${quiet('git', ['rev-parse', '--short', 'HEAD'])}${dirty}`,
  };
}
