// The package as users get it (issue 13, items 8 and 9): `npm pack`, the file list, then the
// tarball installed into scratch projects under os.tmpdir() that use it as ESM, as CommonJS
// (require(esm): Node >= 22.12, also 20.19+) and from TypeScript (nodenext CommonJS, bundler), each run
// against a Redis of its own. It packs dist/ as it is: `npm test` builds first; run alone, it
// builds only when dist/ is missing. The drivers are linked from this repository's node_modules.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RedisServer } from '../harness/redis-server.ts';

const root = resolve(import.meta.dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// TypeScript 7 (the native compiler), installed beside 5.x under an alias.
const tsc7 = join(root, 'node_modules', 'typescript-7', 'bin', 'tsc');

let server: RedisServer;
let scratch: string;
let files: string[];

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

/** What every consumer does: connect, hold a lock, print its fencing token, close. */
const body = (driver: string) => `
const lh = await Leasehold.connect({ url: process.env.REDIS_URL, driver: '${driver}' });
const token = await lh.withLock('consumer', async (lease) => lease.fencingToken);
await lh.close();
console.log(\`ok ${driver} \${token}\`);
`;

before(async () => {
  server = await RedisServer.start();
  if (!existsSync(join(root, 'dist', 'index.js'))) run(npm, ['run', 'build'], root);
  scratch = mkdtempSync(join(tmpdir(), 'leasehold-consumer-'));
  const [packed] = JSON.parse(
    run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], root),
  ) as [{ filename: string; files: { path: string }[] }];
  files = packed.files.map((file) => file.path);
  write(join(scratch, 'package.json'), '{ "name": "scratch", "private": true }\n');
  // The drivers are optional peers, but wasmoon (the memory backend's Lua VM) is a dependency: npm
  // resolves it and its own dependencies from the cache where it can. Not --offline: `npm ci` caches
  // tarballs, not the registry documents a tarball install resolves by (ENOTCACHED on a fresh machine).
  run(
    npm,
    ['install', '--prefer-offline', '--no-audit', '--no-fund', join(scratch, packed.filename)],
    scratch,
  );
  // The drivers, and the frameworks leasehold/nestjs and leasehold/node-cron declare against
  // (optional peers, as the drivers are), from this repository's node_modules.
  mkdirSync(join(scratch, 'node_modules', '@nestjs'), { recursive: true });
  for (const peer of [
    'redis',
    'ioredis',
    'node-cron',
    '@nestjs/common',
    '@nestjs/core',
    'rxjs',
    'reflect-metadata',
  ]) {
    symlinkSync(join(root, 'node_modules', peer), join(scratch, 'node_modules', peer), 'dir');
  }
});

after(async () => {
  await server?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe('the packed package', () => {
  test('ships dist, the Lua scripts, LICENSE and README; no maps, sources or duplicates', () => {
    const wanted = [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/index.js',
      'dist/index.d.ts',
      // The dashboard's page: no front-end build step for users (leasehold dashboard).
      'dist/cli/dashboard.html',
    ];
    assert.deepEqual(
      wanted.filter((file) => !files.includes(file)),
      [],
    );
    assert.ok(files.some((file) => /^dist\/scripts\/.+\.lua$/.test(file)));
    const stray = files.filter((file) => !/^(LICENSE|README\.md|package\.json|dist\/.+)$/.test(file));
    assert.deepEqual(stray, []);
    assert.deepEqual(
      files.filter((file) => file.endsWith('.map')),
      [],
    );
    // The command line's and the demo's declarations serve no importer: no export reaches them.
    assert.deepEqual(
      files.filter((file) => /^dist\/(cli|demo)\/.+\.d\.ts$/.test(file)),
      [],
    );
  });

  test('package.json names the license, repository, homepage and bugs; LICENSE matches', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    assert.equal(manifest.license, 'MIT');
    assert.match(readFileSync(join(root, 'LICENSE'), 'utf8'), /^MIT License\n/);
    assert.match(manifest.repository.url, /github\.com\/leasehold-js\/leasehold/);
    assert.match(manifest.homepage, /^https:\/\//);
    assert.match(manifest.bugs.url, /^https:\/\//);
  });

  test('ESM: import from a .mjs file', () => {
    write(join(scratch, 'esm.mjs'), `import { Leasehold } from 'leasehold';\n${body('node-redis')}`);
    const out = run(process.execPath, ['esm.mjs'], scratch, { REDIS_URL: server.url });
    assert.match(out, /^ok node-redis \d+$/m);
  });

  test('ESM: leasehold/node-cron coordinates one fire between two instances', () => {
    write(
      join(scratch, 'cron.mjs'),
      `import { Leasehold } from 'leasehold';
import { runCoordinator } from 'leasehold/node-cron';
const [a, b] = await Promise.all([0, 1].map(() => Leasehold.connect({ url: process.env.REDIS_URL })));
const fire = \`purge:\${process.pid}\`;
const runs = [await runCoordinator(a).shouldRun(fire, 5_000), await runCoordinator(b).shouldRun(fire, 5_000)];
await runCoordinator(a).onComplete(fire);
await Promise.all([a.close(), b.close()]);
console.log(\`runs \${runs.join(' ')}\`);
`,
    );
    const out = run(process.execPath, ['cron.mjs'], scratch, { REDIS_URL: server.url });
    assert.match(out, /^runs true false$/m);
  });

  test('CommonJS: require() from a .cjs file, the main entry, leasehold/memory and the frameworks', () => {
    write(
      join(scratch, 'cjs.cjs'),
      `const { Leasehold } = require('leasehold');
const { MemoryBackend } = require('leasehold/memory');
if (typeof MemoryBackend !== 'function') throw new Error('no MemoryBackend');
if (typeof require('leasehold/node-cron').runCoordinator !== 'function') throw new Error('no runCoordinator');
const nest = require('leasehold/nestjs');
if (typeof nest.LeaseholdModule.forRoot !== 'function' || typeof nest.WithLock !== 'function') throw new Error('no nestjs');
(async () => {${body('ioredis')}})();
`,
    );
    const out = run(process.execPath, ['cjs.cjs'], scratch, { REDIS_URL: server.url });
    assert.match(out, /^ok ioredis \d+$/m);
  });

  // Only the package's own types are checked strictly; @types/node comes from this repository.
  const tsconfig = (options: Record<string, unknown>) =>
    JSON.stringify({
      compilerOptions: {
        strict: true,
        outDir: 'out',
        types: ['node'],
        typeRoots: [join(root, 'node_modules', '@types')],
        skipLibCheck: true,
        ...options,
      },
      include: ['*.ts'],
    });
  // @internal members are stripped from the public types: using one must not compile.
  const internals = `export function internals(lease: Lease): void {
  // @ts-expect-error renewAt is @internal
  lease.renewAt = 0;
}
`;

  test('TypeScript nodenext, CommonJS: compiles, then runs under require(esm)', () => {
    const dir = join(scratch, 'ts-nodenext');
    write(join(dir, 'package.json'), '{ "type": "commonjs" }\n');
    write(join(dir, 'tsconfig.json'), tsconfig({ module: 'nodenext', target: 'es2022' }));
    write(
      join(dir, 'index.ts'),
      `import { Leasehold, type Lease } from 'leasehold';
${internals}
async function main(): Promise<void> {${body('node-redis')}}
void main();
`,
    );
    run(process.execPath, [tsc, '-p', dir], dir);
    const out = run(process.execPath, [join(dir, 'out', 'index.js')], dir, { REDIS_URL: server.url });
    assert.match(out, /^ok node-redis \d+$/m);
  });

  test('TypeScript bundler resolution, ESM: compiles, then runs', () => {
    const dir = join(scratch, 'ts-bundler');
    write(join(dir, 'package.json'), '{ "type": "module" }\n');
    write(
      join(dir, 'tsconfig.json'),
      tsconfig({ module: 'esnext', moduleResolution: 'bundler', target: 'es2022' }),
    );
    write(
      join(dir, 'index.ts'),
      `import { Leasehold, type Lease } from 'leasehold';\n${internals}${body('ioredis')}`,
    );
    run(process.execPath, [tsc, '-p', dir], dir);
    const out = run(process.execPath, [join(dir, 'out', 'index.js')], dir, { REDIS_URL: server.url });
    assert.match(out, /^ok ioredis \d+$/m);
  });

  // The published declarations themselves, checked as a strict user's compiler checks them
  // (skipLibCheck: false), by a consumer of every public export (test/package/every-export.ts),
  // under the TypeScript lines users run, for each module system a consumer may use.
  const compilers = { 'TypeScript 5': tsc, 'TypeScript 7': tsc7 };
  const systems = {
    'nodenext ESM': { type: 'module', options: { module: 'nodenext' } },
    'nodenext CommonJS': { type: 'commonjs', options: { module: 'nodenext' } },
    bundler: { type: 'module', options: { module: 'esnext', moduleResolution: 'bundler' } },
  };
  for (const [compiler, bin] of Object.entries(compilers)) {
    for (const [system, { type, options }] of Object.entries(systems)) {
      test(`${compiler}, ${system}: every public export compiles with skipLibCheck false`, () => {
        const dir = join(scratch, `every-${compiler}-${system}`.replace(/\W+/g, '-'));
        write(join(dir, 'package.json'), JSON.stringify({ type }));
        write(
          join(dir, 'tsconfig.json'),
          tsconfig({
            ...options,
            target: 'es2022',
            lib: ['es2023', 'esnext.disposable'],
            exactOptionalPropertyTypes: true,
            noUncheckedIndexedAccess: true,
            skipLibCheck: false,
            noEmit: true,
          }),
        );
        write(
          join(dir, 'every-export.ts'),
          readFileSync(join(import.meta.dirname, 'every-export.ts'), 'utf8'),
        );
        run(process.execPath, [bin, '-p', dir], dir);
      });
    }
  }

  test('a declaration that names a missing type fails the check (the check can fail)', () => {
    const dir = join(scratch, 'every-broken');
    write(join(dir, 'package.json'), '{ "type": "module" }');
    write(join(dir, 'tsconfig.json'), tsconfig({ module: 'nodenext', skipLibCheck: false, noEmit: true }));
    write(
      join(dir, 'broken.d.ts'),
      "import type { Handle } from 'leasehold';\nexport declare const h: Handle;\n",
    );
    assert.throws(() => run(process.execPath, [tsc, '-p', dir], dir), /has no exported member 'Handle'/);
  });
});
