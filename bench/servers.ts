// The notification-sensitive scenarios (handoff, loss, crash, idle) once per server line:
// `npm run bench:servers` (about 15 minutes), `npm run bench:servers -- --quick` (about 3).
// Each line runs bench/index.ts in a child process with LEASEHOLD_REDIS_SERVER set to that
// line's binary (scripts/servers.sh fetches them), writes bench/results/servers.json, and, on a
// full run, the "Per server line" section of docs/benchmarks.md.
// Options: --quick, --lines=redis-7.0,valkey-8.0,..., --contenders=a,b, --report=servers.json.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { fmtMs, fmtNum, table } from './report/format.ts';
import { lossCell } from './report/headline.ts';
import type { Results } from './results.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const LINES = ['redis-7.0', 'valkey-8.0', 'redis-8.0', 'valkey-8.1'];
const SCENARIOS = 'handoff,loss,crash,idle';
const CONTENDERS = 'leasehold-node-redis,leasehold-ioredis,redis-semaphore';
const START = '<!-- servers:start -->';
const END = '<!-- servers:end -->';

interface LineResult {
  line: string;
  results: Results;
}

const option = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

function binaryOf(line: string): string {
  if (line === 'redis-7.0') return '';
  const binary = `${root}.servers/${line}/redis-server`;
  if (!existsSync(binary)) throw new Error(`no ${binary}: run \`bash scripts/servers.sh ${line}\` first`);
  return binary;
}

function runLine(line: string, quick: boolean): LineResult {
  const out = `${root}bench/results/server-${line}.tmp.json`;
  const args = [
    '--import',
    'tsx',
    `${root}bench/index.ts`,
    `--only=${SCENARIOS}`,
    `--out=${out}`,
    '--no-docs',
  ];
  args.push(`--contenders=${option('contenders') ?? CONTENDERS}`);
  if (quick) args.push('--quick');
  const env = { ...process.env, LEASEHOLD_REDIS_SERVER: binaryOf(line) };
  console.log(`\n### ${line}`);
  const run = spawnSync(process.execPath, args, { stdio: 'inherit', env, cwd: root });
  if (run.status !== 0) throw new Error(`bench on ${line} exited with ${run.status}`);
  return { line, results: JSON.parse(readFileSync(out, 'utf8')) as Results };
}

/** One row per server line and contender: the figures that depend on how the server tracks keys. */
export function serversSection(lines: LineResult[], command: string): string {
  const rows: string[][] = [];
  for (const { line, results } of lines) {
    const s = results.scenarios;
    const server = results.machine.redisServer.split(' ').slice(0, 3).join(' ');
    for (const c of results.contenders) {
      if (c.unavailable !== undefined) continue;
      const h = s.handoff?.contenders[c.id];
      const loss = s.loss?.contenders[c.id];
      const cap = s.loss?.settings['cap'] ?? 0;
      const crash = s.crash?.contenders[c.id];
      const idle = s.idle?.contenders[c.id];
      rows.push([
        `${line} (${server.replace(/^(\w+) server v=/, '$1 ')})`,
        c.label,
        h === undefined ? '–' : `${fmtMs(h.gap.p50)} / ${fmtMs(h.gap.p99)} ms`,
        loss === undefined ? '–' : `${lossCell(loss.del, cap)} / ${lossCell(loss.takeover, cap)}`,
        crash === undefined ? '–' : `${fmtMs(crash.excess.p50)} ms`,
        idle === undefined ? '–' : fmtNum(idle.commandsPerSecond),
      ]);
    }
  }
  const first = lines[0]?.results;
  return [
    START,
    '## Per server line',
    '',
    `Measured ${first?.machine.date.slice(0, 10) ?? '?'} by \`${command}\` (${first?.mode ?? '?'} run, Node ${first?.machine.node ?? '?'}): the ` +
      'scenarios whose figures depend on how the server tracks keys, on each server line leasehold is ' +
      'tested on (scripts/servers.sh fetches them). Redis 7.0 arms every key a script declares; Redis ' +
      '8 and Valkey only the keys it reads, which is why every leasehold script ends with a read of ' +
      'the keys its caller listens to (docs/compatibility.md). Raw numbers in ' +
      '[bench/results/servers.json](../bench/results/servers.json).',
    '',
    table(
      [
        'server line',
        'library',
        'handoff gap p50 / p99',
        'loss detected p99 (DEL / takeover)',
        'crash: wait beyond TTL p50',
        'idle Redis commands/s',
      ],
      rows,
    ),
    END,
  ].join('\n');
}

/** Replaces the section in docs/benchmarks.md, or appends it. */
export async function writeSection(section: string): Promise<void> {
  const path = `${root}docs/benchmarks.md`;
  const doc = await readFile(path, 'utf8');
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  const next =
    start !== -1 && end > start
      ? `${doc.slice(0, start)}${section}${doc.slice(end + END.length)}`
      : `${doc.trimEnd()}\n\n${section}\n`;
  await writeFile(path, next);
}

async function main(): Promise<void> {
  const report = option('report');
  const command = `npm run bench:servers${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  let lines: LineResult[];
  if (report !== undefined) {
    lines = JSON.parse(await readFile(report, 'utf8')) as LineResult[];
  } else {
    const quick = process.argv.includes('--quick');
    const wanted = option('lines')?.split(',') ?? LINES;
    for (const line of wanted) if (!LINES.includes(line)) throw new Error(`unknown server line ${line}`);
    lines = wanted.map((line) => runLine(line, quick));
    await writeFile(
      `${root}bench/results/${quick ? 'servers.tmp.json' : 'servers.json'}`,
      `${JSON.stringify(lines, null, 2)}\n`,
    );
    if (quick) {
      console.log(`\n${serversSection(lines, command)}`);
      return;
    }
  }
  const section = serversSection(lines, command);
  await writeSection(section);
  console.log(`\nwrote the "Per server line" section of docs/benchmarks.md\n\n${section}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
