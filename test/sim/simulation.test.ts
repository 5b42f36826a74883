// The deterministic simulation (test/sim/world.ts) as part of `npm test`: a fixed range of seeds,
// the same every run (a seed either always passes or always fails), over two processes, within a
// time budget: each process stops starting seeds after SIM_BUDGET_MS and says how many it ran.
// Every seed mixes all the primitives with direct grants and every fault kind. A failure names
// its seeds and the one command that replays each (`npm run sim -- --seed=<n> --verbose`).
// Other seeds are explored with `npm run sim -- --from=<n> --seeds=<count>`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';

const SEEDS = Number(process.env['LEASEHOLD_SIM_SEEDS'] ?? 2_000);
const BUDGET = Number(process.env['LEASEHOLD_SIM_BUDGET_MS'] ?? 100_000);
const PROCESSES = 2;
const REPLAY = new URL('./replay.ts', import.meta.url).pathname;

interface Report {
  ran: number;
  failures: { seed: number; violation: string }[];
  seconds: number;
}

function half(offset: number): Promise<Report> {
  const args = ['--import', 'tsx', REPLAY, `--from=${1 + offset}`, `--stride=${PROCESSES}`];
  args.push(`--seeds=${Math.ceil(SEEDS / PROCESSES)}`, `--budget=${BUDGET}`, '--json');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as Report);
      } catch {
        reject(new Error(`the simulation printed no report:\n${out}`));
      }
    });
  });
}

test(`simulation: up to ${SEEDS} seeds within ${BUDGET / 1000} s, every invariant after every step`, async () => {
  const reports = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => half(i)));
  const ran = reports.reduce((sum, r) => sum + r.ran, 0);
  const failures = reports.flatMap((r) => r.failures).sort((a, b) => a.seed - b.seed);
  console.log(`simulation: ${ran} seeds in ${Math.max(...reports.map((r) => r.seconds))} s`);
  assert.deepEqual(
    failures.map((f) => `seed ${f.seed}: ${f.violation} (replay: npm run sim -- --seed=${f.seed} --verbose)`),
    [],
  );
});
