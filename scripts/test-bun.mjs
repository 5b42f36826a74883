// The Bun lane of scripts/test.mjs: `bun test` on each integration file, two at a time.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** .runtimes/bun/bin/bun, fetched by scripts/runtimes.sh when missing. */
export function bunBinary() {
  const bun = resolve(process.env.LEASEHOLD_RUNTIMES_DIR ?? '.runtimes', 'bun', 'bin', 'bun');
  if (
    !existsSync(bun) &&
    spawnSync('bash', ['scripts/runtimes.sh', 'bun'], { stdio: 'inherit' }).status !== 0
  ) {
    console.error('scripts/runtimes.sh could not fetch Bun: the bun suite cannot run');
    process.exit(2);
  }
  return bun;
}

/**
 * `bun test` on each file in a process of its own, two at a time, output echoed a file at a time
 * (not interleaved) and its closing counts added up. Each file is bounded by the run timeout.
 */
export async function runBun(bun, files, env, { totals, timeoutMs, failures }) {
  const queue = [...files];
  let status = 0;
  const one = (file) =>
    new Promise((resolve) => {
      const child = spawn(
        bun,
        ['test', '--preload', './test/harness/setup.ts', '--timeout', '180000', file],
        { stdio: ['ignore', 'pipe', 'pipe'], env, detached: true },
      );
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      const watchdog = setTimeout(() => {
        output += `\n✖ ${file} did not finish within ${timeoutMs / 1000} s: killed\n`;
        totals.failed += 1;
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      }, timeoutMs);
      child.on('close', (code) => {
        clearTimeout(watchdog);
        process.stdout.write(output);
        // Bun marks a failed test `(fail)`: kept for the summary at the end of the run.
        const failing = output.split('\n').filter((line) => /^\(fail\)|^\s*error:|✖/.test(line));
        if (code !== 0 || failing.length > 0)
          failures.push({ run: `bun ${file}`, lines: failing.slice(0, 40) });
        for (const m of output.matchAll(/^\s*(\d+) (pass|fail|skip)$/gm)) {
          totals[m[2] === 'pass' ? 'passed' : m[2] === 'skip' ? 'skipped' : 'failed'] += Number(m[1]);
        }
        if (code !== 0) status = 1;
        resolve();
      });
    });
  const lane = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) await one(file);
  };
  await Promise.all([lane(), lane()]);
  return status;
}
