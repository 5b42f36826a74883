// The notification-sensitive scenarios (handoff, loss, crash, idle load) once per server line:
// Redis 7.0 arms tracking for every key a script declares, Redis 8 and Valkey only for the keys it
// reads (docs/compatibility.md). The system's redis-server is one line; `bash scripts/servers.sh`
// fetches the others into .servers/<line>/, and a line not fetched is skipped and reported.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { redisServerVersion } from '../../test/harness/server-binary.ts';
import { type Context, errorText } from './context.ts';
import { type CrashResult, crash } from './crash.ts';
import { type HandoffResult, handoff } from './handoff.ts';
import { type IdleResult, idle } from './idle.ts';
import { type LossResult, loss } from './loss.ts';

/** `system` is the redis-server on PATH; the others are scripts/servers.sh's names. */
export const LINES = ['system', 'valkey-8.0', 'redis-8.0', 'valkey-8.1', 'redis-8.6', 'valkey-9.1'];
/** Who runs on every line unless --contenders says otherwise: leasehold's drivers and one peer. */
const CONTENDERS = ['leasehold-node-redis', 'leasehold-ioredis', 'redis-semaphore'];

export interface ServerLine {
  line: string;
  /** "Redis 7.0.15", "Valkey 8.1.4". */
  server: string;
  handoff?: HandoffResult;
  loss?: LossResult;
  crash?: CrashResult;
  idle?: IdleResult;
  failures: Record<string, Record<string, string>>;
}

export interface ServersResult {
  lines: ServerLine[];
  skipped: { line: string; why: string }[];
}

const root = fileURLToPath(new URL('../..', import.meta.url));

export async function servers(ctx: Context): Promise<ServersResult> {
  const result: ServersResult = { lines: [], skipped: [] };
  const wanted = ctx.options.lines ?? LINES;
  const contenders = ctx.contenders.filter((c) => CONTENDERS.includes(c.id));
  const saved = process.env['LEASEHOLD_REDIS_SERVER'];
  try {
    for (const line of wanted) {
      const binary = line === 'system' ? '' : `${root}.servers/${line}/redis-server`;
      if (binary !== '' && !existsSync(binary)) {
        result.skipped.push({ line, why: `not fetched: \`bash scripts/servers.sh ${line}\`` });
        ctx.log(`  ${line}: skipped (not fetched: bash scripts/servers.sh ${line})`);
        continue;
      }
      // Read by the harness on every server start (test/harness/server-binary.ts).
      process.env['LEASEHOLD_REDIS_SERVER'] = binary;
      const server = redisServerVersion();
      ctx.log(`  ${line}: ${server}`);
      const failures: ServerLine['failures'] = {};
      const sub = { ...ctx, contenders, failures, log: (text: string) => ctx.log(`  ${text}`) };
      const entry: ServerLine = { line, server, failures };
      for (const [id, run] of [
        ['handoff', handoff],
        ['loss', loss],
        ['crash', crash],
        ['idle', idle],
      ] as const) {
        try {
          (entry as unknown as Record<string, unknown>)[id] = await run(sub);
        } catch (error) {
          failures[id] = { all: errorText(error) };
          ctx.log(`    ${id}: FAILED: ${failures[id]['all']}`);
        }
      }
      result.lines.push(entry);
    }
  } finally {
    if (saved === undefined) delete process.env['LEASEHOLD_REDIS_SERVER'];
    else process.env['LEASEHOLD_REDIS_SERVER'] = saved;
  }
  return result;
}
