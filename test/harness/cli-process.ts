// A `leasehold` process a test talks to while it runs (cli.ts's leasehold() runs one to its end):
// its output as it comes, and the child commands `run` is given. Shared by cli-run.test.ts and
// cli-views.test.ts.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI } from './cli.ts';
import { testDriver } from './leasehold.ts';
import { reapOnExit } from './reaper.ts';

const NODE = process.execPath;

export interface CliProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code once the process has exited and its output is complete. */
  done: Promise<number>;
  /** Resolves once stdout contains `text` (`times` times). */
  output(text: string, times?: number): Promise<void>;
}

/** Starts `leasehold <args>` against the server at `url` with a private key prefix. */
export function startCli(
  url: string,
  prefix: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): CliProcess {
  const [sub = '', ...rest] = args;
  const child = spawn(
    NODE,
    [...CLI, sub, '--redis', url, '--prefix', prefix, '--driver', testDriver, ...rest],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  reapOnExit(child);
  const result: CliProcess = {
    child,
    stdout: '',
    stderr: '',
    done: once(child, 'close').then(([code]) => code as number),
    output: (text, times = 1) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (result.stdout.split(text).length <= times) return;
          child.stdout?.off('data', check);
          resolve();
        };
        child.stdout?.on('data', check);
        child.once('close', () => reject(new Error(`exited before printing ${text}: ${result.stderr}`)));
        check();
      }),
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    result.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    result.stderr += chunk.toString();
  });
  return result;
}

/** A node one-liner as a command for `run`. */
export const js = (source: string): string[] => [NODE, '-e', source];

/** The fencing token a HOLDER child printed. */
export function tokenOf(run: CliProcess): bigint {
  const match = /ready token=(\d+)/.exec(run.stdout);
  assert.ok(match, `no token printed: ${run.stdout}`);
  return BigInt(match[1]!);
}

/** A child that prints its token, then holds until its stdin closes (or a signal it handles). */
export const HOLDER = `console.log('ready token=' + process.env.LEASEHOLD_FENCING_TOKEN);
process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
