// Runs the test suites with node's test runner. `node scripts/test.mjs [unit|sim|integration|package|fault|servers]`.
// The integration suite runs once per driver and once with polling notifications, as the
// product promises the same behaviour in each mode. `servers` runs the notification-sensitive
// suites on every server line (scripts/servers.sh fetches them); LEASEHOLD_SERVER_LINES picks
// some, e.g. `LEASEHOLD_SERVER_LINES=valkey-8.0,redis-8.0 node scripts/test.mjs servers`, and
// LEASEHOLD_SERVER_DRIVERS the drivers (default: node-redis,ioredis,glide; glide in polling mode), LEASEHOLD_SERVER_SUITES the
// suites (default: integration,fault). LEASEHOLD_TEST_ENVS narrows
// the other suites' matrix, e.g. `LEASEHOLD_TEST_ENVS=node-redis+tracking` (CI's second runtime).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bunBinary, runBun } from './test-bun.mjs';

/**
 * The suites need Node 22.12+ (`engines`: the first Node 22 that loads ES modules from require(),
 * and the runtime features the code uses). A fresh machine of this project's kind has Node 20,
 * on which some tests fail in ways nobody could read. So `npm test` there fetches Node 24 LTS
 * into .runtimes/ with scripts/runtimes.sh (the npm registry, nothing installed system-wide) and
 * runs the suites on it, saying so in one line. LEASEHOLD_NO_RUNTIME_FETCH=1 makes it an error.
 */
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  const node24 = resolve(process.env.LEASEHOLD_RUNTIMES_DIR ?? '.runtimes', 'node-24', 'bin', 'node');
  const needs = `Node ${process.version} is older than the 22.12 leasehold's tests need`;
  if (process.env.LEASEHOLD_NO_RUNTIME_FETCH) {
    console.error(`${needs}: install Node 22.12+ (or unset LEASEHOLD_NO_RUNTIME_FETCH to fetch one)`);
    process.exit(2);
  }
  console.log(
    `${needs}: running them on Node 24 LTS from ${dirname(dirname(node24))} (bash scripts/runtimes.sh 24)`,
  );
  if (
    !existsSync(node24) &&
    spawnSync('bash', ['scripts/runtimes.sh', '24'], { stdio: 'inherit' }).status !== 0
  ) {
    console.error(`${needs}, and scripts/runtimes.sh could not fetch Node 24: install Node 22.12+`);
    process.exit(2);
  }
  const env = { ...process.env, PATH: `${dirname(node24)}:${process.env.PATH ?? ''}` };
  const rerun = spawnSync(node24, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env,
  });
  process.exit(rerun.status ?? 1);
}

const suites = process.argv.slice(2);
/**
 * `bun`: the integration suite on Bun (node-redis + tracking) but for the files that run in the
 * first environment only (ONCE, below), each file in a Bun process of its own as node's runner
 * gives each file one (a file that leaves process-wide state behind must not
 * fail the next), two at a time. `bun test` runs node:test files as they are; its default 5 s
 * test timeout is raised to the suite's 3 minutes. Bun comes from the npm registry
 * (scripts/runtimes.sh bun) when .runtimes/ has none. The fault suite does not run there: its
 * checker refuses Bun's process clock (docs/compatibility.md).
 */
const BUN_ENV = { LEASEHOLD_TEST_DRIVER: 'node-redis', LEASEHOLD_TEST_NOTIFICATIONS: 'tracking' };
// `package` packs dist/ as built (npm test builds first) and installs it into scratch projects.
const wanted = suites.length > 0 ? suites : ['unit', 'sim', 'integration', 'package', 'fault'];

/**
 * A run that outlives this is killed with its test files and fails: node's --test-timeout covers
 * tests, not hooks or a file whose process never exits, and a hang must fail CI in minutes with
 * the name of its run, not at CI's own limit. The longest run takes about 100 s.
 */
const RUN_TIMEOUT_MS = Number(process.env.LEASEHOLD_RUN_TIMEOUT_MS ?? 600_000);

const tracked = (driver) => ({ LEASEHOLD_TEST_DRIVER: driver, LEASEHOLD_TEST_NOTIFICATIONS: 'tracking' });
const polled = (driver) => ({ LEASEHOLD_TEST_DRIVER: driver, LEASEHOLD_TEST_NOTIFICATIONS: 'polling' });
/**
 * Polling mode runs on Valkey GLIDE, which only polls (docs/compatibility.md): the polling paths
 * and the third client in one run. node-redis in polling mode differs from it only in its driver
 * not arming tracking: `LEASEHOLD_TEST_ENVS=node-redis+polling` runs it.
 */
const matrix = {
  unit: [{}],
  // The deterministic simulation (test/sim/): its own two processes, one run.
  sim: [{}],
  package: [{}],
  integration: [tracked('node-redis'), tracked('ioredis'), polled('glide')],
  fault: [tracked('node-redis')],
};

/**
 * What `servers` runs on each line: every suite whose outcome depends on how the server tracks
 * keys (holders and waiters of every primitive, every topology, the contracts, the notification
 * canary, the memory backend's scripts against the server's), and the short safety run. The CLI,
 * fuzz and model suites do not, nor the files whose outcome no tracking rule changes and that
 * cost the most (quorum, mutex-processes, mutex-faults, stalls, extend-race, own-client, own-keys,
 * key-majority: about two minutes of CI per line; they run on Redis 7.0 in every client's run).
 */
const SERVER_SUITES = [
  {
    dir: 'integration',
    names:
      /^(mutex|cluster|sentinel|semaphore|rwlock|fair|election|conformance-redis|redis-contract|script-tracking|memory-scripts|restart-empty|fence-expiry|fence-clock|key-lifetimes|events|notifications|doctor|release-race|inspect(-topologies)?|live-view|direct-grants(-[a-z]+)?|grant-strands|grant-failover)\.test\.ts$/,
    // GLIDE only polls (docs/compatibility.md): its line runs in polling mode.
    envs: [tracked('node-redis'), tracked('ioredis'), polled('glide')],
  },
  { dir: 'fault', names: /^safety\.test\.ts$/, envs: [tracked('node-redis')] },
];
const ALL_LINES = ['redis-7.0', 'valkey-8.0', 'redis-8.0', 'valkey-8.1', 'redis-8.6', 'valkey-9.1'];

/** The server binary of a line: the system's redis-server for 7.0, scripts/servers.sh's for the others. */
function serverOf(line) {
  if (line === 'redis-7.0') return '';
  const binary = resolve(process.env.LEASEHOLD_SERVERS_DIR ?? '.servers', line, 'redis-server');
  if (!existsSync(binary)) {
    console.error(`no ${binary}: run \`bash scripts/servers.sh ${line}\` first (npm run test:servers does)`);
    process.exit(2);
  }
  return binary;
}

/**
 * Integration files that run in the first environment of the matrix only: those about the command
 * line (its flags, messages, output), which drives the same drivers as the library, whose own
 * suites run in every environment (running them three times cost about two minutes of CI for
 * nothing), tls, which runs each of its cases on both drivers itself, the PostgreSQL files,
 * which use no Redis client at all, and the frameworks' (node-cron, NestJS: what they call is
 * the library's surface, the same on every driver). Bun runs the others.
 */
const ONCE =
  /^(cli-run|cli-views|cli-inputs-(run|views)|cli-messages|cli-status|cli-release|cli-topologies|dashboard|demo|tls|conformance-postgres|postgres-faults|postgres-driver|postgres-strands|postgres-lock-order|frameworks|cli-postgres)\.test\.ts$/;

/** Every run to make: a label, the files, and the environment. */
function runs() {
  const out = [];
  for (const suite of wanted) {
    if (suite === 'bun') {
      const files = testFiles(join('test', 'integration')).filter((file) => !ONCE.test(basename(file)));
      out.push({ suite, files, env: BUN_ENV, runtime: 'bun' });
      continue;
    }
    if (suite !== 'servers') {
      const files = testFiles(join('test', suite));
      const envs = files.length === 0 ? [] : chosenEnvs(matrix[suite] ?? [{}]);
      for (const [i, env] of envs.entries()) {
        const mine = i === 0 ? files : files.filter((file) => !ONCE.test(basename(file)));
        out.push({ suite, files: mine, env });
      }
      continue;
    }
    const lines = (process.env.LEASEHOLD_SERVER_LINES ?? ALL_LINES.join(',')).split(',').filter(Boolean);
    // LEASEHOLD_SERVER_SUITES=integration leaves the short safety run out (CI runs it on two lines).
    const dirs = (process.env.LEASEHOLD_SERVER_SUITES ?? 'integration,fault').split(',');
    for (const line of lines) {
      const binary = serverOf(line);
      const drivers = (process.env.LEASEHOLD_SERVER_DRIVERS ?? 'node-redis,ioredis,glide').split(',');
      for (const { dir, names, envs } of SERVER_SUITES.filter((suite) => dirs.includes(suite.dir))) {
        const files = testFiles(join('test', dir)).filter((file) => names.test(basename(file)));
        for (const env of envs.filter((e) => drivers.includes(e.LEASEHOLD_TEST_DRIVER))) {
          out.push({
            suite: `${line} ${dir}`,
            files,
            env: { ...env, LEASEHOLD_REDIS_SERVER: binary, LEASEHOLD_SERVER_LINE: line },
          });
        }
      }
    }
  }
  return out;
}

/**
 * The environments LEASEHOLD_TEST_ENVS names (`driver+notifications`, any pair, in the matrix or
 * not), or the suite's matrix; a suite without drivers (unit, package) keeps its own.
 */
function chosenEnvs(envs) {
  const names = process.env.LEASEHOLD_TEST_ENVS?.split(',').filter(Boolean);
  if (names === undefined || names.length === 0 || envs.every((e) => e.LEASEHOLD_TEST_DRIVER === undefined))
    return envs;
  return names.map((name) => {
    const [driver, notifications = 'tracking'] = name.split('+');
    return { LEASEHOLD_TEST_DRIVER: driver, LEASEHOLD_TEST_NOTIFICATIONS: notifications };
  });
}

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

/**
 * Every suite starts redis-server processes of its own. With none on PATH (a bare machine) and
 * LEASEHOLD_REDIS_SERVER unset, the tests would fail one by one with `spawn redis-server ENOENT`:
 * use a server line scripts/servers.sh fetched already, else fetch Valkey 8.0 with it (Debian's
 * packages, nothing installed system-wide), else say in one line what to do and exit 2.
 */
function defaultServer() {
  if (process.env.LEASEHOLD_REDIS_SERVER) return;
  if (spawnSync('redis-server', ['--version']).status === 0) return;
  const dir = process.env.LEASEHOLD_SERVERS_DIR ?? '.servers';
  const fetched = () =>
    ['valkey-8.0', ...ALL_LINES].map((line) => resolve(dir, line, 'redis-server')).find((b) => existsSync(b));
  let binary = fetched();
  if (binary === undefined && spawnSync('sh', ['-c', 'command -v apt-get']).status === 0) {
    console.log('no redis-server on PATH: fetching Valkey 8.0 with `bash scripts/servers.sh valkey-8.0`');
    spawnSync('bash', ['scripts/servers.sh', 'valkey-8.0'], { stdio: 'inherit' });
    binary = fetched();
  }
  if (binary === undefined) {
    console.error(
      'no redis-server on PATH: install one (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set LEASEHOLD_REDIS_SERVER to a redis-server binary',
    );
    process.exit(2);
  }
  console.log(`no redis-server on PATH: the suites run ${binary}`);
  process.env.LEASEHOLD_REDIS_SERVER = binary;
}

defaultServer();
/** When this run began: what removeGlideSockets() may clean up is newer. */
const startedAt = Date.now();
/** Where each run's file times go (test/harness/file-times.mjs), to print where its time went. */
const timesDir = mkdtempSync(join(tmpdir(), 'leasehold-times-'));
const timesFile = join(timesDir, 'times.tsv');
let failed = false;
const totals = { passed: 0, failed: 0, skipped: 0 };
/**
 * Each failing run's "failing tests" section (the spec reporter prints it after the run's counts),
 * printed again at the very end: CI keeps the tail of a log, and a failure far above it showed
 * only its name there, never its assertion (stops 44 and 45).
 */
const failures = [];
for (const { suite, files, env, runtime } of runs()) {
  const binary = env.LEASEHOLD_REDIS_SERVER || process.env.LEASEHOLD_REDIS_SERVER || 'redis-server';
  const version = spawnSync(binary, ['--version']).stdout?.toString();
  const server = version ? version.split(' ').slice(0, 3).join(' ') : `${binary}: not found`;
  const label = [env.LEASEHOLD_TEST_DRIVER, env.LEASEHOLD_TEST_NOTIFICATIONS].filter(Boolean).join(' + ');
  if (runtime === 'bun') {
    const bun = bunBinary();
    const on = `Bun ${spawnSync(bun, ['--version']).stdout.toString().trim()}`;
    console.log(`\n=== ${suite} integration (${label}; ${server}; ${on}) ===`);
    const options = { totals, timeoutMs: RUN_TIMEOUT_MS, failures };
    if ((await runBun(bun, files, { ...process.env, ...env }, options)) !== 0) failed = true;
    continue;
  }
  const title = `${suite} (${label || 'default'}; ${server}; Node ${process.version})`;
  console.log(`\n=== ${title} ===`);
  const status = await run(
    title,
    [
      '--import',
      'tsx',
      '--import',
      './test/harness/setup.ts',
      '--test',
      '--test-concurrency=2',
      // A hung test fails after 3 minutes instead of stalling the whole run.
      '--test-timeout=180000',
      // A file whose tests have all ended exits even if a failed test left a client open (its
      // reconnect timers would keep the process, and the run, alive until the watchdog): the
      // failure is then reported instead of hidden behind "did not finish" (CI rehearsal).
      '--test-force-exit',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=./test/harness/file-times.mjs',
      `--test-reporter-destination=${timesFile}`,
      ...files,
    ],
    { ...process.env, ...env },
  );
  if (status !== 0) failed = true;
  printSlowest();
}
removeGlideSockets();
for (const { run, lines } of failures) {
  console.log(`\n=== failures of ${run} (the run's own report is above) ===`);
  for (const line of lines) console.log(line);
}
rmSync(timesDir, { recursive: true, force: true });
console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(failed ? 1 : 0);

/**
 * Valkey GLIDE's Node client leaves a socket file, glide-socket-<pid>-<uuid>.sock, in the
 * runtime directory (else the temporary one) of every process that used it, and never removes it
 * (valkey-glide#4747; docs/compatibility.md). Each GLIDE test file is a process of its own, so a
 * run left a few hundred. This removes the ones made during this run whose process has exited:
 * never a live process's, never an older one's.
 */
function removeGlideSockets() {
  for (const dir of new Set([process.env.XDG_RUNTIME_DIR, tmpdir()].filter(Boolean))) {
    let entries;
    try {
      entries = readdirSync(dir);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const pid = /^glide-socket-(\d+)-[0-9a-f-]+\.sock$/.exec(entry)?.[1];
      if (pid === undefined || alive(Number(pid))) continue;
      const path = join(dir, entry);
      try {
        if (statSync(path).mtimeMs >= startedAt) rmSync(path);
      } catch {
        // gone already, or not ours to remove
      }
    }
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * The run's slowest test files and the sum over all of them (file time: a file's top-level tests
 * one after another; the run's wall time is about half of the sum, two files at a time), so that
 * a CI log says where its minutes went.
 */
function printSlowest() {
  let rows;
  try {
    rows = readFileSync(timesFile, 'utf8').trim().split('\n').filter(Boolean);
    rmSync(timesFile);
  } catch {
    return;
  }
  const seconds = (row) => Number(row.split('\t')[0]) / 1000;
  const total = rows.reduce((sum, row) => sum + seconds(row), 0);
  const slowest = rows
    .slice(0, 5)
    .map((row) => `${basename(row.split('\t')[1])} ${seconds(row).toFixed(1)} s`);
  console.log(`file time ${total.toFixed(0)} s; slowest: ${slowest.join(', ')}`);
}

/**
 * Runs node's test runner, echoing its output and adding up its closing counts; a run that fails
 * leaves its "failing tests" section (at most 150 lines) in `failures`.
 */
function run(title, args, env) {
  return new Promise((resolve) => {
    // Its own process group, so that a watchdog kill reaches the per-file test processes too.
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'inherit'],
      env,
      detached: true,
    });
    const watchdog = setTimeout(() => {
      console.log(
        `\n✖ this run did not finish within ${RUN_TIMEOUT_MS / 1000} s: killed (a hung hook or a process that never exits)`,
      );
      totals.failed += 1;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, RUN_TIMEOUT_MS);
    let pending = '';
    /** The "failing tests" section's lines, once the reporter has begun it. */
    let failing;
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (/^\S+ failing tests:/.test(line)) failing = [];
        if (failing && failing.length < 150) failing.push(line);
        const m = /^\S+ (pass|fail|cancelled|skipped) (\d+)$/.exec(line.trim());
        if (m) totals[m[1] === 'pass' ? 'passed' : m[1] === 'skipped' ? 'skipped' : 'failed'] += Number(m[2]);
      }
    });
    child.on('close', (code) => {
      clearTimeout(watchdog);
      if (failing || code !== 0) failures.push({ run: title, lines: failing ?? [`exit code ${code}`] });
      resolve(code ?? 1);
    });
  });
}
