// The benchmark suite, the one entry: `npm run bench` (every scenario but the budget, about an
// hour), `npm run bench -- --quick` (the same code with small samples, a few minutes),
// `npm run bench -- --only=a,b`. `--help` lists the options.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Config, full, quick } from './config.ts';
import { contenders as allContenders } from './contenders/index.ts';
import { compileBaseline, compileLeasehold } from './lib/build.ts';
import { loadAverage, machine } from './lib/machine.ts';
import { headline } from './report/headline.ts';
import { markdown } from './report/markdown.ts';
import { writeReadmeHeadline } from './report/readme.ts';
import { versus } from './report/versus.ts';
import type { Results, ScenarioId, Scenarios } from './results.ts';
import { budget } from './scenarios/budget.ts';
import { cluster } from './scenarios/cluster.ts';
import { type Context, errorText, type RunOptions } from './scenarios/context.ts';
import { crash } from './scenarios/crash.ts';
import { failover } from './scenarios/failover.ts';
import { handoff, idleHandoff } from './scenarios/handoff.ts';
import { idle } from './scenarios/idle.ts';
import { loss } from './scenarios/loss.ts';
import { postgres } from './scenarios/postgres.ts';
import { scale } from './scenarios/scale.ts';
import { LINES, servers } from './scenarios/servers.ts';
import { uncontended } from './scenarios/uncontended.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const path = (relative: string) => `${root}${relative}`;

type Scenario = { id: ScenarioId; title: string; run: (ctx: Context) => Promise<Scenarios[ScenarioId]> };
const scenarios: Scenario[] = [
  { id: 'uncontended', title: '1. uncontended acquire + release', run: uncontended },
  { id: 'handoff', title: '2. handoff between processes', run: handoff },
  { id: 'idleHandoff', title: '2b. handoff to idle waiters (150-250 ms holds)', run: idleHandoff },
  { id: 'loss', title: '3. loss detection', run: loss },
  { id: 'crash', title: '4. crash recovery', run: crash },
  { id: 'failover', title: '4b. election failover (leasehold): time to a new leader by TTL', run: failover },
  { id: 'idle', title: '5. idle load', run: idle },
  { id: 'scale', title: '6. scale: held leases, waiters on one name, waiters on many', run: scale },
  { id: 'cluster', title: '7. Redis Cluster, by masters', run: cluster },
  { id: 'servers', title: '8. per server line', run: servers },
  { id: 'postgres', title: '9. PostgreSQL', run: postgres },
  { id: 'budget', title: 'the hot-path budget: client CPU and bytes per pair', run: budget },
];
/** A check, not a figure for the docs: only when asked for (`--only=budget`). */
const OPT_IN: ScenarioId[] = ['budget'];
const scenarioIds = scenarios.map((s) => s.id);
const contenderIds = allContenders.map((c) => c.id);

const usage = `Usage: npm run bench -- [options]   (or: node --import tsx bench/index.ts [options])

Side-by-side benchmarks of leasehold and the peer libraries. A full run of every scenario (about an
hour) writes bench/results/latest.json, docs/benchmarks.md, its charts and README's headline table;
any other run writes bench/results/last.tmp.json only.

  --quick                 the same scenarios with small samples (a few minutes)
  --only=a,b              scenarios: ${scenarioIds.join(', ')}
                          (every one but ${OPT_IN.join(', ')} by default)
  --contenders=a,b        contenders: ${contenderIds.join(', ')}
  --baseline=<ref>        also build leasehold as it was at <ref> (git archive of its src/ into
                          bench/.build/) and measure it next to this tree, interleaved round by round,
                          as leasehold-baseline-*; prints a before/after table. The budget compares
                          with it:  npm run bench -- --only=budget --baseline=<last release tag>
                          (exits 1 when this tree is over the budget)
  --profile               one .cpuprofile per contender worker of uncontended and budget, in
                          bench/results/profiles/ (open it in Chrome DevTools)
  --stages                record each handoff's stages (handoff, idleHandoff): where the gap goes
  --lines=a,b             server lines for servers: ${LINES.join(', ')}
  --out=file.json         where to write the results
  --docs | --no-docs      write (or not) docs/benchmarks.md, its charts and README's table
  --report=results.json   only rewrite the docs from saved results (--no-docs: print the table)
  -h, --help              this text

  BENCH_LOW_LATENCY_INTERVAL=<ms>  the low-latency contenders' PING interval (default 2, as
                          lowLatency: true)
`;

const bool = { type: 'boolean' } as const;
const text = { type: 'string' } as const;
/** Strict: an unknown option stops the run before it starts, so that a typo never costs an hour. */
function parse() {
  const flags = { quick: bool, docs: bool, 'no-docs': bool, profile: bool, stages: bool, help: bool };
  const valued = { only: text, contenders: text, out: text, report: text, baseline: text, lines: text };
  try {
    return parseArgs({ options: { ...flags, h: bool, ...valued }, strict: true }).values;
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n\n${usage}`);
    process.exit(2);
  }
}
const args = parse();
const list = (given: string | undefined, name: string, known: readonly string[]) => {
  for (const x of given?.split(',') ?? []) if (!known.includes(x)) throw new Error(`--${name}: unknown ${x}`);
  return given?.split(',');
};

const KEEP_BEGIN = '<!-- hand-written: begin (kept by `npm run bench`) -->';
const KEEP_END = '<!-- hand-written: end -->';

async function writeDocs(results: Results): Promise<void> {
  // vega is large: loaded only when charts are drawn, so that --help stays quick.
  const { renderCharts } = await import('./report/charts.ts');
  const charts = await renderCharts(results, path('docs/benchmarks'));
  // A chart this run did not draw would stay in the directory, linked by nothing.
  for (const file of await readdir(path('docs/benchmarks')))
    if (file.endsWith('.svg') && !charts.some((c) => c.file === file))
      await rm(path(`docs/benchmarks/${file}`));
  // The part written by hand (where the time goes) is kept from the previous page as it is.
  const previous = await readFile(path('docs/benchmarks.md'), 'utf8').catch(() => '');
  const from = previous.indexOf(KEEP_BEGIN);
  const to = previous.indexOf(KEEP_END);
  const kept = from === -1 || to < from ? '' : `\n${previous.slice(from, to + KEEP_END.length)}\n`;
  await writeFile(path('docs/benchmarks.md'), markdown(results, charts) + kept);
  await writeReadmeHeadline(results, path('README.md'));
  console.log(`wrote docs/benchmarks.md, ${charts.length} charts in docs/benchmarks/ and README's table`);
}

/** Builds leasehold for the workers (they inherit the environment) and the baseline when asked. */
async function build(baselineRef: string | undefined): Promise<Results['baseline']> {
  if (process.env['BENCH_LEASEHOLD'] === undefined) {
    const compiled = await compileLeasehold();
    if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD'] = compiled.entry;
    process.env['BENCH_LEASEHOLD_NOTE'] = compiled.note;
    console.log(`leasehold: ${compiled.note}`);
  }
  if (baselineRef === undefined) return undefined;
  const compiled = await compileBaseline(baselineRef);
  if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD_BASELINE'] = compiled.entry;
  process.env['BENCH_LEASEHOLD_BASELINE_COMMIT'] = compiled.commit;
  process.env['BENCH_LEASEHOLD_BASELINE_NOTE'] = compiled.note;
  console.log(`leasehold baseline: ${compiled.note}`);
  return { ref: baselineRef, commit: compiled.commit, subject: compiled.subject, note: compiled.note };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (args.help || args.h) {
    process.stdout.write(usage);
    return 0;
  }
  if (args.report !== undefined) {
    const results = JSON.parse(await readFile(args.report, 'utf8')) as Results;
    // Schema 1 (before issue 42) kept scale in another shape: that section is left out.
    if (results.schema !== 2) delete results.scenarios.scale;
    if (!args['no-docs']) await writeDocs(results); // --no-docs: the headline only
    console.log(`\n${headline(results)}`);
    return 0;
  }
  const config: Config = args.quick ? quick : full;
  const only = list(args.only, 'only', scenarioIds) as ScenarioId[] | undefined;
  const wanted = list(args.contenders, 'contenders', contenderIds);
  const baselineRef = args.baseline;
  if (wanted?.some((id) => allContenders.find((c) => c.id === id)?.baseline) && baselineRef === undefined)
    throw new Error('the leasehold-baseline-* contenders need --baseline=<ref>');
  const chosen = allContenders.filter((c) =>
    wanted === undefined ? !c.baseline || baselineRef !== undefined : wanted.includes(c.id),
  );
  const baseline = await build(baselineRef);
  const options: RunOptions = {
    stages: args.stages === true,
    ...(args.profile ? { profile: path('bench/results/profiles') } : {}),
    ...(args.lines === undefined ? {} : { lines: list(args.lines, 'lines', LINES)! }),
    ...(baseline === undefined ? {} : { baseline: baseline.commit }),
  };
  if (options.profile !== undefined) await mkdir(options.profile, { recursive: true });
  const infos = await Promise.all(chosen.map((c) => c.info()));
  const runnable = chosen.filter((_, i) => infos[i]?.unavailable === undefined);
  for (const info of infos)
    if (info.unavailable !== undefined) console.log(`skipping ${info.label}: ${info.unavailable}`);
  const started = performance.now();
  const results: Results = {
    schema: 2,
    mode: config.mode,
    command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    machine: machine(),
    loadAverageAtEnd: [],
    durationSeconds: 0,
    ...(baseline === undefined ? {} : { baseline }),
    contenders: infos,
    scenarios: {},
    timings: {},
    errors: {},
    failures: {},
  };
  const m = results.machine;
  console.log(
    `leasehold benchmarks (${config.mode}): ${runnable.map((c) => c.id).join(', ')}; ${m.cpus} × ${m.cpuModel}, ` +
      `${m.redisServer.split(' ').slice(0, 3).join(' ')}, load ${m.loadAverage.join(' ')}`,
  );
  for (const scenario of scenarios) {
    if (only === undefined ? OPT_IN.includes(scenario.id) : !only.includes(scenario.id)) continue;
    console.log(`\n${scenario.title}`);
    const t0 = performance.now();
    const contenders = runnable.filter((c) => c.scenarios === undefined || c.scenarios.includes(scenario.id));
    const ctx: Context = {
      config,
      options,
      contenders,
      log: (line) => console.log(line),
      failures: results.failures,
    };
    try {
      (results.scenarios as Record<string, unknown>)[scenario.id] = await scenario.run(ctx);
    } catch (error) {
      results.errors[scenario.id] = errorText(error, true);
      console.log(`  FAILED: ${results.errors[scenario.id]}`);
    }
    const seconds = (performance.now() - t0) / 1000;
    results.timings[scenario.id] = { seconds, loadAverage: loadAverage() };
    console.log(`  (${seconds.toFixed(1)} s)`);
  }
  results.durationSeconds = (performance.now() - started) / 1000;
  results.loadAverageAtEnd = loadAverage();

  // A run with a baseline build is a comparison, not the page's report of this tree.
  const complete = only === undefined && wanted === undefined && baseline === undefined && !options.stages;
  const out =
    args.out ??
    path(config.mode === 'full' && complete ? 'bench/results/latest.json' : 'bench/results/last.tmp.json');
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${out} (${(results.durationSeconds / 60).toFixed(1)} min)`);
  if (args.docs || (!args['no-docs'] && config.mode === 'full' && complete)) await writeDocs(results);
  console.log(`\n${headline(results)}\n`);
  const compared = versus(results);
  if (compared !== '')
    console.log(`This tree against ${baseline?.commit ?? 'the baseline'}, same run:\n\n${compared}\n`);
  // The budget's verdict is the exit code, so that a release script can stop on it.
  return results.scenarios.budget?.within === false || results.errors.budget !== undefined ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
