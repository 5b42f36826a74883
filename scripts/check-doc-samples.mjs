// Compiles every ```ts code block of README.md and docs/*.md against the sources, so that the
// documentation cannot drift from the API. `node scripts/check-doc-samples.mjs` (also run by
// `npm run docs` and by test/unit/doc-samples.test.ts).
//
// Each block is its own module with top-level await. Unless it imports for itself, it sees every
// export of 'leasehold' and an `lh: Leasehold` (unless it declares its own `lh`). A few helpers
// that samples call for illustration are declared below. Mark a block that is not meant to
// compile (a shell session, a fragment) with ```ts no-check.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
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
    found.push({ line: i + 2, code: body.join('\n'), check: !/no-check/.test(open[3]) });
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { count, ok, output } = check();
  if (!ok) {
    process.stderr.write(`${output}\ndoc samples: compile errors (file:line refer to the Markdown)\n`);
    process.exit(1);
  }
  console.log(`doc samples: ${count} TypeScript blocks compile`);
}
