// `npm run safety`: runs every fault scenario in every mode Leasehold.connect() supports, checks
// each run with the safety checker and writes docs/safety.md.
//
//   node --import tsx test/fault/run.ts [--short] [--only id,id] [--modes single,quorum] [--out file]
//     [--rounds n] [--repeat n] [--load] [--primitives mutex,semaphore,write,fair]
//
// Every scenario runs with the workers contending for a mutex; the scenarios of PRIMITIVE_SCENARIOS
// run again, in single mode, for a semaphore of one permit, a read-write lock's write side and a fair
// lock (their waiters are granted directly too). --primitives runs only those, for every selected
// scenario (the others in single mode).
//
// --short uses a 400 ms TTL, 2 workers and one round per scenario (what the test suite runs); the default is
// a 1 s TTL and 3 rounds; --rounds overrides either. --repeat runs the selection n times and ends with a
// tally of the runs that broke a check and why (each overlap with its cause). --load spins one busy
// process for the whole run (CPU contention: late timers, slow handoffs). The report is written for
// complete single runs, or to --out when given.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { reapOnExit } from '../harness/reaper.ts';
import { runScenario } from './engine.ts';
import { MODES, pendingReason } from './modes.ts';
import { callsLine, type Row, renderReport } from './report.ts';
import { FencedResource } from './resource.ts';
import { PRIMITIVE_SCENARIOS, SCENARIOS } from './scenarios.ts';
import type { FaultPrimitive, ModeName, RunResult } from './types.ts';
import { violations } from './verdict.ts';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    only: { type: 'string' },
    modes: { type: 'string' },
    out: { type: 'string' },
    rounds: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    load: { type: 'boolean', default: false },
    primitives: { type: 'string' },
  },
});
const PRIMITIVES: readonly FaultPrimitive[] = ['mutex', 'semaphore', 'write', 'fair'];
const chosen = values.primitives?.split(',') as FaultPrimitive[] | undefined;
for (const p of chosen ?? [])
  if (!PRIMITIVES.includes(p)) throw new TypeError(`--primitives: unknown primitive ${JSON.stringify(p)}`);
/** The primitives a scenario runs with in a mode. */
const primitivesFor = (id: string, mode: ModeName): readonly FaultPrimitive[] => {
  const others = mode === 'single' || mode === 'postgres' ? PRIMITIVES.slice(1) : [];
  if (chosen !== undefined) return chosen.filter((p) => p === 'mutex' || others.includes(p));
  return PRIMITIVE_SCENARIOS.includes(id) ? ['mutex', ...others] : ['mutex'];
};
const ttl = values.short ? 400 : 1_000;
const rounds = values.rounds === undefined ? (values.short ? 1 : 3) : Number(values.rounds);
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1) throw new TypeError(`--repeat must be a positive integer`);
if (!Number.isInteger(rounds) || rounds < 1) throw new TypeError(`--rounds must be a positive integer`);
const workers = values.short ? 2 : 3;
const only = values.only?.split(',');
const modes = (values.modes?.split(',') ?? ['single', 'quorum', 'cluster', 'postgres']) as ModeName[];
// Exit through process.exit so the harness's exit hook kills every server and worker it started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
const started = performance.now();
if (values.load) startLoad();
const resource = await FencedResource.start();
const rows: Row[] = [];
const broke: string[] = [];
let failed = false;
try {
  for (let run = 1; run <= repeat; run++)
    for (const scenario of SCENARIOS) {
      if (only !== undefined && !only.includes(scenario.id)) continue;
      for (const name of modes) {
        const mode = MODES[name];
        if (scenario.modes !== undefined && !scenario.modes.includes(name)) continue;
        if (scenario.needsProxy && !mode.proxied) {
          rows.push({
            scenario,
            mode: name,
            pending: 'n/a: needs a proxy per client (cluster nodes announce real ports)',
          });
          continue;
        }
        const pending = pendingReason(mode, scenario);
        if (pending !== undefined) {
          rows.push({ scenario, mode: name, pending: `pending: ${pending}` });
          console.log(`${scenario.id} x ${name}: pending (${pending})`);
          continue;
        }
        for (const primitive of primitivesFor(scenario.id, name)) {
          const label = primitive === 'mutex' ? name : `${name} (${primitive})`;
          let result: RunResult;
          try {
            result = await runScenario(scenario, mode, { ttl, rounds, workers, resource, primitive });
          } catch (error) {
            failed = true;
            console.log(`${scenario.id} x ${label}: runner failed: ${String(error)}`);
            continue;
          }
          const broken = violations(result, scenario);
          if (broken.length > 0) {
            failed = true;
            broke.push(`run ${run}: ${scenario.id} x ${label}: ${broken.join('; ')}`);
          }
          if (repeat === 1) rows.push({ scenario, mode: name, result, violations: broken });
          console.log(
            `${repeat > 1 ? `[${run}/${repeat}] ` : ''}${scenario.id} x ${label}: ${result.criticalSections} sections, ${result.overlaps.length} overlaps, ` +
              `${result.staleRejected} stale rejected, ${result.staleAccepted} stale accepted, worst lag ` +
              `${result.worstLag.toFixed(1)} ms, ${result.seconds.toFixed(1)} s` +
              (broken.length > 0 ? `\n  VIOLATIONS: ${broken.join('; ')}` : ''),
          );
          if (scenario.commandTimeout !== undefined || scenario.freeAfterHeal !== undefined) {
            console.log(`  calls: ${callsLine(result)}`);
          }
          for (const detail of result.lapseDetails.slice(-3)) console.log(`  lapse: ${detail}`);
          for (const o of result.overlaps) console.log(`  overlap ${o.ms.toFixed(1)} ms: ${o.cause}`);
          const shown = /^the wall clock|^wall clock|stopped trusting|did not stop|^stalled/;
          for (const note of result.notes.filter((n) => shown.test(n))) console.log(`  note: ${note}`);
          if (Object.keys(result.abortReasons).length > 0)
            console.log(`  aborts: ${JSON.stringify(result.abortReasons)}`);
        }
      }
    }
} finally {
  await resource.stop();
}
const seconds = (performance.now() - started) / 1_000;
if (repeat > 1) {
  console.log(
    `\n${repeat} repetitions${values.load ? ' under load' : ''}: ${broke.length} run(s) broke a check`,
  );
  for (const line of broke) console.log(`  ${line}`);
}
const complete = only === undefined && values.modes === undefined && chosen === undefined && repeat === 1;
const out = values.out ?? (complete ? 'docs/safety.md' : undefined);
if (out !== undefined) {
  const previous = existsSync(out) ? readFileSync(out, 'utf8') : '';
  writeFileSync(out, renderReport(rows, { ttl, rounds, workers, seconds }, previous));
  console.log(`wrote ${out}`);
}
console.log(`${failed ? 'FAILED' : 'passed'} in ${seconds.toFixed(0)} s`);
process.exit(failed ? 1 : 0);

/** One busy process for the length of the run, killed (by its own pid) when the runner exits. */
function startLoad(): void {
  const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  reapOnExit(spinner);
  console.log(`load: busy process ${spinner.pid}`);
}
