import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * The redis-server binary every harness process runs: `LEASEHOLD_REDIS_SERVER` (a path, e.g.
 * `.servers/valkey-8.0/redis-server` from scripts/servers.sh), else `redis-server` on PATH.
 * Sentinels run the same binary with `--sentinel`. Read on each call, so that a runner (the
 * bench's per-server-line mode) can switch lines between runs.
 */
export function redisServerBinary(): string {
  const given = process.env['LEASEHOLD_REDIS_SERVER'];
  return given === undefined || given === '' ? 'redis-server' : resolve(given);
}

const versions = new Map<string, string>();

/** "Redis 7.0.15", "Valkey 8.0.1": the product and version `--version` prints. */
export function redisServerVersion(): string {
  const binary = redisServerBinary();
  let version = versions.get(binary);
  if (version === undefined) {
    const out = execFileSync(binary, ['--version']).toString();
    const m = /^(\w+) server v=(\S+)/.exec(out);
    version = m === null ? out.trim() : `${m[1]} ${m[2]}`;
    versions.set(binary, version);
  }
  return version;
}

/**
 * Which keys a script arms for client tracking on the server under test (DESIGN.md section 2):
 * Redis <= 7.0 every declared key once the script reads anything; Redis >= 7.2 and Valkey only
 * the keys its read-only commands read.
 */
export function serverTrackingRule(): 'declared-keys' | 'read-keys' {
  const [product, version = ''] = redisServerVersion().split(' ');
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (product === 'Valkey') return 'read-keys';
  return major > 7 || (major === 7 && minor >= 2) ? 'read-keys' : 'declared-keys';
}
