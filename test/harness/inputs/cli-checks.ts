// What the command line's input properties (cli-inputs-run.test.ts, cli-inputs-views.test.ts)
// share: a spawned `leasehold` process, waiting for its output, and the check every case ends with.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a long wait must still be going when the test looks (a spawned CLI is slow to start). */
export const PROBE_MS = 300;

export interface Cli {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<number>;
}

/** Resolves once `cli`'s `stream` holds `text`; rejects if it exits first. */
export async function output(cli: Cli, stream: 'stdout' | 'stderr', text: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!cli[stream].includes(text)) {
    if (cli.child.exitCode !== null) throw new Error(`exited before "${text}": ${cli.stderr}`);
    if (Date.now() > deadline) throw new Error(`no "${text}" within 15 s: ${cli.stderr}`);
    await sleep(10);
  }
}

/** What every case must show: no warning from Node, no stack trace. */
export function clean(cli: { stderr: string }, what: string): void {
  assert.doesNotMatch(cli.stderr, /\(node:\d+\) \w*Warning/, `${what}: Node warned: ${cli.stderr}`);
  assert.doesNotMatch(cli.stderr, /\n\s+at .+:\d+:\d+/, `${what}: a stack trace: ${cli.stderr}`);
}
