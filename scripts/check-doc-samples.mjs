// Compiles every ```ts code block of README.md and docs/*.md against the sources, then runs each
// against a redis-server of its own, so that the documentation cannot drift from the API and its
// samples run as written. `node scripts/check-doc-samples.mjs` (also run by `npm run docs`;
// test/unit/doc-samples.test.ts compiles, test/package/doc-samples.test.ts runs).
//
// Each block is its own module with top-level await. Unless it imports for itself, it sees every
// export of 'leasehold' and an `lh: Leasehold` (unless it declares its own `lh`). A few helpers
// that samples call for illustration are declared below. Mark a block that is not meant to
// compile (a shell session, a fragment) with ```ts no-check, and one that needs more than one
// Redis (quorum, cluster, sentinel) with ```ts no-run. When run, `lh` is connected to the Redis
// the script starts, and the helpers do nothing.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { basename, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const out = join(root, '.tmp', 'doc-samples');

const PRELUDE = `// Prelude added by scripts/check-doc-samples.mjs
declare const lh: import('leasehold').Leasehold;
declare const signal: AbortSignal;
declare function work(signal?: AbortSignal, fencingToken?: bigint): Promise<void>;
declare function purge(signal?: AbortSignal): Promise<void>;
declare const db: { query(sql: string, params?: unknown[]): Promise<unknown> };
declare function use(value: unknown): void;
declare function load(): Promise<unknown>;
declare function save(value: unknown, options?: { fence: bigint }): Promise<void>;
declare const newConfig: unknown;
declare function runScheduler(options: { signal: AbortSignal; fence: bigint }): Promise<void>;
declare function pay(batch: unknown, options?: { fence: bigint }): Promise<void>;
declare const batch: unknown;
`;

/** Public names of the package entry, for samples that do not import for themselves. */
function publicNames() {
  const index = readFileSync(join(root, 'src', 'index.ts'), 'utf8');
  const names = new Set();
  for (const block of index.matchAll(/export\s+(type\s+)?\{([^}]*)\}/g)) {
    const typeOnly = block[1] !== undefined;
    for (const part of block[2].split(',')) {
      const name = part.trim();
      if (name === '') continue;
      const isType = typeOnly || name.startsWith('type ');
      const bare = name
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop();
      names.add(isType ? `type ${bare}` : bare);
    }
  }
  return [...names];
}

function markdownFiles() {
  const files = [];
  if (existsSync(join(root, 'README.md'))) files.push(join(root, 'README.md'));
  const docs = join(root, 'docs');
  if (existsSync(docs)) {
    for (const entry of readdirSync(docs).sort()) if (entry.endsWith('.md')) files.push(join(docs, entry));
  }
  return files;
}

/** Every ```ts / ```typescript block: { line, code, check }. */
export function samples(text) {
  const found = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(ts|typescript)\b(.*)$/.exec(lines[i]);
    if (open === null) continue;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(open[1].length));
    const check = !/no-check/.test(open[3]);
    found.push({ line: i + 2, code: body.join('\n'), check, run: check && !/no-run/.test(open[3]) });
    i = j;
  }
  return found;
}

export function check() {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const names = publicNames();
  const files = [];
  for (const md of markdownFiles()) {
    for (const sample of samples(readFileSync(md, 'utf8'))) {
      if (!sample.check) continue;
      const ownImports = /^\s*import\s/m.test(sample.code);
      const ownLh = /\b(const|let|var|using)\s+lh\b/.test(sample.code);
      const header = [
        ownImports ? '' : `import { ${names.join(', ')} } from 'leasehold';`,
        ownLh ? PRELUDE.replace(/^declare const lh.*$/m, '') : PRELUDE,
      ].join('\n');
      // The sample sits at its Markdown line numbers, so tsc's positions are the Markdown's;
      // imports and declarations after it still apply (both are hoisted).
      const file = join(out, `${relative(root, md).replaceAll('/', '__')}.L${sample.line}.ts`);
      writeFileSync(file, `${'\n'.repeat(sample.line - 1)}${sample.code}\n${header}\nexport {};\n`);
      files.push(basename(file));
    }
  }
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(
    join(out, 'tsconfig.json'),
    JSON.stringify(
      {
        extends: '../../tsconfig.json',
        compilerOptions: {
          noEmit: true,
          incremental: true,
          tsBuildInfoFile: join(root, '.tmp', 'doc-samples.tsbuildinfo'),
          types: ['node'],
          typeRoots: [join(root, 'node_modules', '@types')],
          paths: {
            leasehold: [join(root, 'src', 'index.ts')],
            'leasehold/memory': [join(root, 'src', 'memory', 'index.ts')],
            'leasehold/node-cron': [join(root, 'src', 'frameworks', 'node-cron.ts')],
            'leasehold/nestjs': [join(root, 'src', 'frameworks', 'nestjs.ts')],
          },
        },
        include: ['*.ts'],
      },
      null,
      2,
    ),
  );
  if (files.length === 0) return { count: 0, ok: true, output: '' };
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(out, 'tsconfig.json'), '--pretty', 'false'], {
    encoding: 'utf8',
  });
  const output = `${result.stdout}${result.stderr}`.replace(
    /(?:\.tmp\/doc-samples\/)?([\w.-]+?)\.L(\d+)\.ts\((\d+),(\d+)\)/g,
    (_m, name, _block, line, col) => `${name.replaceAll('__', '/')}:${line}:${col}`,
  );
  // Only errors inside the samples count here; the sources themselves are `npm run typecheck`'s job.
  const sampleErrors = output
    .split('\n')
    .filter((line) => /^(README\.md|docs\/[\w.-]+\.md):\d+:\d+: error/.test(line));
  const configError = result.status !== 0 && !/error TS\d+/.test(output);
  return {
    count: files.length,
    ok: sampleErrors.length === 0 && !configError,
    output: sampleErrors.join('\n') || output,
  };
}

/** The helpers of PRELUDE, as code that runs (each left out when a sample defines its own). */
const HELPERS = {
  signal: 'const signal = new AbortController().signal;',
  work: 'async function work(_signal?: AbortSignal, _fence?: bigint): Promise<void> {}',
  purge: 'async function purge(_signal?: AbortSignal): Promise<void> {}',
  db: 'const db = { async query(_sql: string, _params?: unknown[]): Promise<unknown> { return []; } };',
  use: 'function use(_value: unknown): void {}',
  load: 'async function load(): Promise<unknown> { return {}; }',
  save: 'async function save(_value: unknown, _options?: { fence: bigint }): Promise<void> {}',
  newConfig: 'const newConfig: unknown = {};',
  runScheduler:
    'async function runScheduler(_options: { signal: AbortSignal; fence: bigint }): Promise<void> {}',
  pay: 'async function pay(_batch: unknown, _options?: { fence: bigint }): Promise<void> {}',
  batch: 'const batch: unknown = {};',
};

// Connects the `lh` samples use, runs the sample, closes `lh`. A sample that leaves something
// open (its own connection, say) is ended after a grace period rather than hanging the check.
const RUNNER = `import { Leasehold } from 'leasehold';
const lh = await Leasehold.connect({ url: process.env.REDIS_URL, prefix: \`doc-\${process.pid}\` });
(globalThis as { __docLh?: Leasehold }).__docLh = lh;
await import(process.argv[2]!);
await lh.close();
setTimeout(() => process.exit(0), 2_000).unref();
`;

/** Runs every sample not marked no-check or no-run, one process each, against `url`. */
export async function execute(url) {
  const dir = join(root, '.tmp', 'doc-samples-run');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(dir, 'runner.ts'), RUNNER);
  const names = publicNames().filter((name) => !name.startsWith('type '));
  const failures = [];
  let count = 0;
  for (const md of markdownFiles()) {
    for (const sample of samples(readFileSync(md, 'utf8'))) {
      if (!sample.run) continue;
      const where = `${relative(root, md)}:${sample.line}`;
      const defines = (name) =>
        new RegExp(`\\b(const|let|var|using|function|class)\\s+${name}\\b`).test(sample.code);
      const header = [
        /^\s*import\s/m.test(sample.code) ? '' : `import { ${names.join(', ')} } from 'leasehold';`,
        defines('lh')
          ? ''
          : "const lh = (globalThis as { __docLh?: import('leasehold').Leasehold }).__docLh!;",
        ...Object.entries(HELPERS).flatMap(([name, code]) => (defines(name) ? [] : [code])),
      ].join('\n');
      const file = join(dir, `${relative(root, md).replaceAll('/', '__')}.L${sample.line}.ts`);
      writeFileSync(file, `${header}\n${sample.code}\nexport {};\n`);
      count += 1;
      const result = await runFile(file, url, join(out, 'tsconfig.json'));
      if (result.code !== 0) failures.push(`${where}: exit ${result.code}\n${result.output.trim()}`);
    }
  }
  return { count, ok: failures.length === 0, output: failures.join('\n\n') };
}

function runFile(file, url, tsconfig) {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, '.tmp', 'doc-samples-run', 'runner.ts'), file],
      // tsx resolves 'leasehold' through the `paths` of check()'s tsconfig.
      {
        env: { ...process.env, REDIS_URL: url, TSX_TSCONFIG_PATH: tsconfig },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => {
      output += '\n(still running after 20 s: killed)';
      child.kill('SIGKILL');
    }, 20_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output });
    });
  });
}

/** A redis-server on a free port, stopped through its own pid (never by name). */
export async function startRedis() {
  const port = await new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const child = spawn(
    process.env.LEASEHOLD_REDIS_SERVER || 'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
  };
  process.once('exit', stop);
  for (let i = 0; i < 250; i++) {
    const up = await new Promise((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (up) return { url: `redis://127.0.0.1:${port}`, stop };
    await sleep(20);
  }
  stop();
  throw new Error('redis-server did not start within 5 s');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { count, ok, output } = check();
  if (!ok) {
    process.stderr.write(`${output}\ndoc samples: compile errors (file:line refer to the Markdown)\n`);
    process.exit(1);
  }
  console.log(`doc samples: ${count} TypeScript blocks compile`);
  const redis = await startRedis();
  try {
    const ran = await execute(redis.url);
    if (!ran.ok) {
      process.stderr.write(`${ran.output}\ndoc samples: some blocks failed when run\n`);
      process.exitCode = 1;
    } else console.log(`doc samples: ${ran.count} blocks run`);
  } finally {
    redis.stop();
  }
}
