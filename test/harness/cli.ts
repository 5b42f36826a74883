import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { within } from './leasehold.ts';
import { reapOnExit } from './reaper.ts';

/** The CLI's entry, run from source through tsx (no build needed). */
export const MAIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

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
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
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
