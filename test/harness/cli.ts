import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { within } from './leasehold.ts';
import { reapOnExit } from './reaper.ts';

/** The CLI's entry in source, run through tsx. */
export const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;
const BUILT = new URL('../../dist/cli/main.js', import.meta.url).pathname;

/** The newest (or, with `oldest`, the oldest) modification time of the files under `dir`. */
function mtimes(dir: string, oldest = false): number {
  let out = oldest ? Number.POSITIVE_INFINITY : 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? mtimes(path, oldest) : statSync(path).mtimeMs;
    out = oldest ? Math.min(out, time) : Math.max(out, time);
  }
  return out;
}

/**
 * How the tests start `leasehold`: the build in dist/ when every file of it is newer than every
 * source file (`npm test` builds first: what users run, and twice as fast to start as tsx, which
 * transpiles the CLI in every process; the CLI suites start hundreds), else the source through
 * tsx, so that a test run after an edit never runs a stale build.
 */
export const CLI: readonly string[] = (() => {
  const src = new URL('../../src', import.meta.url).pathname;
  const dist = new URL('../../dist', import.meta.url).pathname;
  const fresh = existsSync(BUILT) && mtimes(dist, true) > mtimes(src);
  return fresh ? [BUILT] : ['--import', 'tsx', MAIN];
})();

export interface CliOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `leasehold <args>` to completion (at most `limit` ms). With `until`, stops it with SIGINT
 * once stdout contains that text (the long-running views: watch, top, dashboard).
 */
export async function leasehold(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; until?: string; limit?: number } = {},
): Promise<CliOutcome> {
  const child = spawn(process.execPath, [...CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  reapOnExit(child);
  const out = { stdout: '', stderr: '' };
  let stopped = false;
  child.stdout.on('data', (chunk: Buffer) => {
    out.stdout += chunk.toString();
    // Once: a second SIGINT during shutdown is a forced stop (no handler left), by design.
    if (!stopped && options.until !== undefined && out.stdout.includes(options.until)) {
      stopped = true;
      child.kill('SIGINT');
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const limit = options.limit ?? 30_000;
  try {
    const [code] = (await within(once(child, 'close'), limit, `leasehold ${args.join(' ')}`)) as [number];
    return { code, ...out };
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\nstdout: ${out.stdout}\nstderr: ${out.stderr}`);
  }
}
