// Runs the test suites with node's test runner. `node scripts/test.mjs [unit|integration|...]`.
// The integration suite runs once per driver and once with polling notifications, as the
// product promises the same behaviour in each mode.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const suites = process.argv.slice(2);
const wanted = suites.length > 0 ? suites : ['unit', 'integration', 'fault'];

const matrix = {
  unit: [{}],
  integration: [
    { LEASEHOLD_TEST_DRIVER: 'node-redis', LEASEHOLD_TEST_NOTIFICATIONS: 'tracking' },
    { LEASEHOLD_TEST_DRIVER: 'ioredis', LEASEHOLD_TEST_NOTIFICATIONS: 'tracking' },
    { LEASEHOLD_TEST_DRIVER: 'node-redis', LEASEHOLD_TEST_NOTIFICATIONS: 'polling' },
  ],
  fault: [{ LEASEHOLD_TEST_DRIVER: 'node-redis', LEASEHOLD_TEST_NOTIFICATIONS: 'tracking' }],
};

function testFiles(dir) {
  let out = [];
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const entry of entries.sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out = out.concat(testFiles(path));
    else if (/\.test\.ts$/.test(entry)) out.push(path);
  }
  return out;
}

let failed = false;
const totals = { passed: 0, failed: 0, skipped: 0 };
for (const suite of wanted) {
  const files = testFiles(join('test', suite));
  if (files.length === 0) continue;
  for (const env of matrix[suite] ?? [{}]) {
    const label = Object.values(env).join(' + ') || 'default';
    console.log(`\n=== ${suite} (${label}) ===`);
    const status = await run(
      [
        '--import',
        'tsx',
        '--import',
        './test/harness/setup.ts',
        '--test',
        '--test-concurrency=2',
        // A hung test fails after 3 minutes instead of stalling the whole run.
        '--test-timeout=180000',
        '--test-reporter=spec',
        ...files,
      ],
      { ...process.env, ...env },
    );
    if (status !== 0) failed = true;
  }
}
console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(failed ? 1 : 0);

/** Runs node's test runner, echoing its output and adding up its closing counts. */
function run(args, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
    let pending = '';
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const m = /^\S+ (pass|fail|cancelled|skipped) (\d+)$/.exec(line.trim());
        if (m) totals[m[1] === 'pass' ? 'passed' : m[1] === 'skipped' ? 'skipped' : 'failed'] += Number(m[2]);
      }
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}
