// The benchmark suite: `npm run bench` (about 5-10 minutes), `npm run bench -- --quick` (about one).
// Options: --quick, --only=floor,handoff,..., --contenders=redlock,..., --out=file.json,
// --baseline=<commit> (also measure leasehold built from that commit, same run),
// --docs / --no-docs (write docs/benchmarks.md and its charts; default: full runs of everything),
// --report=results.json (rewrite the docs from saved results without measuring).
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Config, full, quick } from './config.ts';
import { contenders as allContenders } from './contenders/index.ts';
import { compileBaseline, compileLeasehold } from './lib/build.ts';
import { machine } from './lib/machine.ts';
import { headline } from './report/headline.ts';
import { markdown } from './report/markdown.ts';
import { writeReadmeHeadline } from './report/readme.ts';
import { versus } from './report/versus.ts';
import type { Results, ScenarioId, Scenarios } from './results.ts';
import type { Context } from './scenarios/context.ts';
import { crash } from './scenarios/crash.ts';
import { floor } from './scenarios/floor.ts';
import { handoff, idleHandoff } from './scenarios/handoff.ts';
import { idle } from './scenarios/idle.ts';
import { loss } from './scenarios/loss.ts';
import { scale } from './scenarios/scale.ts';
import { uncontended } from './scenarios/uncontended.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const path = (relative: string) => `${root}${relative}`;

const scenarios: { id: ScenarioId; title: string; run: (ctx: Context) => Promise<Scenarios[ScenarioId]> }[] =
  [
    { id: 'floor', title: '7. the floor: PING, redis-benchmark, client EVALSHA', run: floor },
    { id: 'uncontended', title: '1. uncontended acquire + release', run: uncontended },
    { id: 'handoff', title: '2. handoff between processes', run: handoff },
    { id: 'idleHandoff', title: '2b. handoff to idle waiters (150-250 ms holds)', run: idleHandoff },
    { id: 'loss', title: '3. loss detection', run: loss },
    { id: 'crash', title: '4. crash recovery', run: crash },
    { id: 'idle', title: '5. idle load', run: idle },
    { id: 'scale', title: '6. scale', run: scale },
  ];

const usage = `Usage: npm run bench -- [options]   (or: node --import tsx bench/index.ts [options])

Side-by-side benchmarks of leasehold and the peer libraries, each scenario on its own redis-server.
A full run takes 5-10 minutes and writes bench/results/latest.json, docs/benchmarks.md and
docs/benchmarks/*.svg; any other run writes bench/results/last.tmp.json only.

  --quick                 the same scenarios with smaller samples (about a minute)
  --only=a,b              scenarios: ${scenarios.map((s) => s.id).join(', ')}, postgres
  --contenders=a,b        contenders: ${allContenders.map((c) => c.id).join(', ')}
                          (the leasehold-baseline-* ones need --baseline)
  --baseline=<commit>     also build leasehold as it was at <commit> (git archive of its src/ into
                          bench/.build/, same tsc settings) and measure it next to this tree in the
                          same run, interleaved round by round, as leasehold-baseline-node-redis and
                          leasehold-baseline-ioredis (labelled "leasehold @ <commit>"); prints a
                          before/after table at the end. Such a run leaves latest.json and the docs
                          alone unless --out / --docs say otherwise. Example:
                            npm run bench -- --baseline=38ed758 --only=uncontended,handoff,scale \\
                              --contenders=leasehold-node-redis,leasehold-baseline-node-redis
  --out=file.json         where to write the results
  --docs | --no-docs      write (or not) docs/benchmarks.md and the charts
  --report=results.json   only rewrite the docs from saved results
  -h, --help              this text
`;

const known = ['quick', 'docs', 'no-docs', 'help'];
const valued = ['only', 'contenders', 'out', 'report', 'baseline'];

/** Rejects anything it does not know, so that a typo never starts a ten-minute run. */
function checkArgs(argv: string[]): void {
  for (const arg of argv) {
    if (arg === '-h') continue;
    const match = /^--([a-z-]+)(=.*)?$/.exec(arg);
    const name = match?.[1] ?? '';
    const ok = match !== null && (match[2] === undefined ? known.includes(name) : valued.includes(name));
    if (!ok) {
      process.stderr.write(`bench: unknown option ${arg}

${usage}`);
      process.exit(2);
    }
  }
}

function option(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
}
const flag = (name: string) => process.argv.includes(`--${name}`);

const KEEP_BEGIN = '<!-- hand-written: begin (kept by `npm run bench`) -->';
const KEEP_END = '<!-- hand-written: end -->';

async function writeDocs(results: Results): Promise<void> {
  // vega is large: loaded only when charts are drawn, so that --help stays quick.
  const { renderCharts } = await import('./report/charts.ts');
  const charts = await renderCharts(results, path('docs/benchmarks'));
  // An earlier full run kept for "before and after" (bench/report/progress.ts), when present.
  const baseline = await readFile(path('bench/results/baseline.json'), 'utf8').then(
    (text) => JSON.parse(text) as Results,
    () => undefined,
  );
  // Sections written by hand below the generated report (per server line, script costs, the
  // breakdown) are kept from the previous page as they are.
  const previous = await readFile(path('docs/benchmarks.md'), 'utf8').catch(() => '');
  const from = previous.indexOf(KEEP_BEGIN);
  const to = previous.indexOf(KEEP_END);
  const kept = from === -1 || to < from ? '' : `\n${previous.slice(from, to + KEEP_END.length)}\n`;
  await writeFile(path('docs/benchmarks.md'), markdown(results, charts, baseline) + kept);
  console.log(`wrote docs/benchmarks.md and ${charts.length} charts in docs/benchmarks/`);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return;
  }
  checkArgs(argv);
  const saved = option('report');
  if (saved !== undefined) {
    const results = JSON.parse(await readFile(saved, 'utf8')) as Results;
    await writeDocs(results);
    await writeReadmeHeadline(results);
    console.log(`\n${headline(results)}`);
    return;
  }
  const config: Config = flag('quick') ? quick : full;
  const only = option('only')?.split(',');
  const wanted = option('contenders')?.split(',');
  for (const id of only ?? []) {
    if (id !== 'postgres' && !scenarios.some((s) => s.id === id)) throw new Error(`unknown scenario ${id}`);
  }
  const baselineRef = option('baseline');
  for (const id of wanted ?? []) {
    const found = allContenders.find((c) => c.id === id);
    if (found === undefined) throw new Error(`unknown contender ${id}`);
    if (found.baseline && baselineRef === undefined)
      throw new Error(`contender ${id} needs --baseline=<commit>`);
  }
  const chosen = allContenders.filter((c) =>
    wanted === undefined ? !c.baseline || baselineRef !== undefined : wanted.includes(c.id),
  );
  let baseline: Results['baseline'];
  if (baselineRef !== undefined) {
    if (!chosen.some((c) => c.baseline))
      throw new Error('--baseline given, but no leasehold-baseline-* contender');
    const compiled = await compileBaseline(baselineRef);
    // Inherited by the worker processes, like BENCH_LEASEHOLD.
    if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD_BASELINE'] = compiled.entry;
    process.env['BENCH_LEASEHOLD_BASELINE_COMMIT'] = compiled.commit;
    process.env['BENCH_LEASEHOLD_BASELINE_NOTE'] = compiled.note;
    baseline = { ref: baselineRef, commit: compiled.commit, subject: compiled.subject, note: compiled.note };
    console.log(`leasehold baseline: ${compiled.note}`);
  }
  if (chosen.some((c) => c.id.startsWith('leasehold')) && process.env['BENCH_LEASEHOLD'] === undefined) {
    const compiled = await compileLeasehold();
    if (compiled.entry !== undefined) process.env['BENCH_LEASEHOLD'] = compiled.entry;
    process.env['BENCH_LEASEHOLD_NOTE'] = compiled.note;
    console.log(`leasehold: ${compiled.note}`);
  }
  const infos = await Promise.all(chosen.map((c) => c.info()));
  const runnable = chosen.filter((_, i) => infos[i]?.unavailable === undefined);
  for (const info of infos) {
    if (info.unavailable !== undefined) console.log(`skipping ${info.label}: ${info.unavailable}`);
  }
  const started = performance.now();
  const results: Results = {
    schema: 1,
    mode: config.mode,
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
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
  console.log(
    `leasehold benchmarks (${config.mode}): ${runnable.map((c) => c.id).join(', ')}; ` +
      `${results.machine.cpus} × ${results.machine.cpuModel}, ${results.machine.redisServer.split(' ').slice(0, 3).join(' ')}, ` +
      `load ${results.machine.loadAverage.join(' ')}`,
  );
  const ctx: Context = {
    config,
    contenders: runnable,
    log: (line) => console.log(line),
    failures: results.failures,
  };
  for (const scenario of scenarios) {
    if (only !== undefined && !only.includes(scenario.id)) continue;
    console.log(`\n${scenario.title}`);
    const t0 = performance.now();
    try {
      const contenders = runnable.filter(
        (c) => c.scenarios === undefined || c.scenarios.includes(scenario.id),
      );
      (results.scenarios as Record<string, unknown>)[scenario.id] = await scenario.run({
        ...ctx,
        contenders,
      });
    } catch (error) {
      results.errors[scenario.id] = error instanceof Error ? (error.stack ?? error.message) : String(error);
      console.log(`  FAILED: ${results.errors[scenario.id]}`);
    }
    const seconds = (performance.now() - t0) / 1000;
    results.timings[scenario.id] = { seconds, loadAverage: loadavg().map((x) => Math.round(x * 100) / 100) };
    console.log(`  (${seconds.toFixed(1)} s)`);
  }
  // PostgreSQL (docs/postgres.md): its own contenders and server, in a process of its own.
  if (only === undefined || only.includes('postgres')) {
    console.log('\n8. PostgreSQL: leasehold beside session and polled advisory locks (bench/postgres.ts)');
    const json = path(
      config.mode === 'full' && only === undefined
        ? 'bench/results/postgres-latest.json'
        : 'bench/results/postgres-last.tmp.json',
    );
    const samples = config.mode === 'full' ? 200 : 30;
    const ran = spawnSync(
      process.execPath,
      ['--import', 'tsx', path('bench/postgres.ts'), `--samples=${samples}`, `--json=${json}`],
      {
        stdio: 'inherit',
      },
    );
    if (ran.status !== 0) {
      const why = `bench/postgres.ts exited with ${ran.status ?? ran.signal}`;
      console.log(`  FAILED: ${why}`);
      results.failures['postgres'] = { 'leasehold-postgres': why };
    }
  }
  results.durationSeconds = (performance.now() - started) / 1000;
  results.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);

  // A run with a baseline build is a comparison, not the page's report of this tree.
  const complete = only === undefined && wanted === undefined && baseline === undefined;
  const out =
    option('out') ??
    path(config.mode === 'full' && complete ? 'bench/results/latest.json' : 'bench/results/last.tmp.json');
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${out} (${(results.durationSeconds / 60).toFixed(1)} min)`);
  const docs = flag('docs') || (!flag('no-docs') && config.mode === 'full' && complete);
  if (docs) {
    await writeDocs(results);
    await writeReadmeHeadline(results);
  }
  console.log(`\n${headline(results)}\n`);
  const compared = versus(results);
  if (compared !== '')
    console.log(`This tree against ${baseline?.commit ?? 'the baseline'}, same run:\n\n${compared}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
