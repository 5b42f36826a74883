// Runs simulation seeds from the command line (test/sim/):
//   npm run sim -- --seed=1234 --verbose      one seed, every event printed (a failing seed's replay)
//   npm run sim -- --seeds=500 [--from=1]     many seeds, a summary and each failing seed
// Options: --duration=<virtual ms>, --no-faults, --faults=subscription,pause (only those kinds),
// --stride=<n> (every n-th seed from --from), --budget=<ms> (stop starting seeds after this long;
// the count run is printed), --json (one line: seeds run, the failing ones).
import { prepare, run } from './world.ts';

const args = new Map(
  process.argv.slice(2).map((arg) => {
    const [k, v = 'true'] = arg.replace(/^--/, '').split('=');
    return [k, v] as [string, string];
  }),
);
const verbose = args.has('verbose');
const faults = !args.has('no-faults');
const duration = args.has('duration') ? Number(args.get('duration')) : undefined;
const only = args.get('faults')?.split(',');
await prepare();
const one = args.get('seed');
const seeds = one === undefined ? Number(args.get('seeds') ?? 100) : 1;
const from = one === undefined ? Number(args.get('from') ?? 1) : Number(one);
const stride = Number(args.get('stride') ?? 1);
const budget = Number(args.get('budget') ?? Number.POSITIVE_INFINITY);
const json = args.has('json');
let failed = 0;
let ran = 0;
const failures: { seed: number; violation: string }[] = [];
const started = Date.now();
for (let seed = from; seed < from + seeds * stride; seed += stride) {
  if (Date.now() - started > budget) break;
  ran += 1;
  const result = await run({
    seed,
    verbose,
    faults,
    ...(duration === undefined ? {} : { duration }),
    ...(only === undefined ? {} : { only }),
  });
  if (result.violations.length > 0) {
    failed += 1;
    failures.push({ seed, violation: result.violations[0] ?? '' });
    if (json) continue;
    console.log(`seed ${seed}: ${result.violations[0]}`);
    if (!verbose && one !== undefined) console.log(result.log.slice(-60).join('\n'));
    console.log(`  replay: npm run sim -- --seed=${seed} --verbose`);
  } else if (one !== undefined) {
    console.log(
      `seed ${seed}: ok (${result.steps} steps, ${result.leases} leases, ${result.timeouts} timeouts)`,
    );
  }
}
const took = ((Date.now() - started) / 1000).toFixed(1);
if (json) console.log(JSON.stringify({ ran, failures, seconds: Number(took) }));
else console.log(`${ran} seeds, ${failed} failed, ${took} s`);
process.exitCode = failed > 0 ? 1 : 0;
