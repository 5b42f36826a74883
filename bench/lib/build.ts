import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
/** Private build output (bench/.gitignore): never the package's own dist/. */
const buildDir = join(root, 'bench/.build');

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name));
}

/** A file's mtime, 0 when there is no such file. */
const mtime = async (file: string) => (await stat(file).catch(() => undefined))?.mtimeMs ?? 0;

export interface CompiledLeasehold {
  /** index.js of the compiled copy, or undefined when it could not be compiled. */
  entry: string | undefined;
  note: string;
}

/**
 * `tsc -p <project>/tsconfig.build.json` into `out` without declarations or maps, then the files
 * tsc does not copy (the .lua scripts and their includes, the dashboard's page), as
 * scripts/copy-lua.mjs does for dist/. Resolves tsc's first diagnostic line ('' when clean).
 */
async function compile(project: string, out: string): Promise<string> {
  await rm(out, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const args = [tsc, '-p', join(project, 'tsconfig.build.json'), '--outDir', out, '--declaration', 'false'];
  args.push('--declarationMap', 'false', '--sourceMap', 'false');
  let diagnostics = '';
  try {
    await run(process.execPath, args, { cwd: project, maxBuffer: 1 << 22 });
  } catch (error) {
    diagnostics = String((error as { stdout?: string }).stdout ?? error).split('\n')[0] ?? '';
  }
  const src = join(project, 'src');
  for (const file of (await files(src)).filter((f) => !f.endsWith('.ts'))) {
    const target = join(out, relative(src, file));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
  return diagnostics;
}

/**
 * Compiles src/ with the package's own build settings into bench/.build, so that leasehold is
 * measured as users run it (plain JavaScript), like the peers, and not through tsx's on-the-fly
 * transform (which costs it 10-30 % of its uncontended throughput here). Reused while no file in
 * src/ is newer than the last build.
 */
export async function compileLeasehold(): Promise<CompiledLeasehold> {
  const out = join(buildDir, 'leasehold');
  const stamp = join(out, '.built');
  const entry = join(out, 'index.js');
  const sources = await files(join(root, 'src'));
  const newest = Math.max(...(await Promise.all(sources.map(mtime))));
  if ((await mtime(stamp)) >= newest)
    return { entry, note: 'compiled from src/ with tsconfig.build.json (reused build)' };
  const diagnostics = await compile(root, out);
  if ((await mtime(entry)) === 0)
    return { entry: undefined, note: `src/ did not compile (${diagnostics}); run from src/ through tsx` };
  await writeFile(stamp, new Date().toISOString());
  const warning = diagnostics === '' ? '' : ` (tsc reported: ${diagnostics})`;
  return { entry, note: `compiled from src/ with tsconfig.build.json${warning}` };
}

export interface CompiledBaseline extends CompiledLeasehold {
  /** The commit, abbreviated as git does (what the report prints). */
  commit: string;
  /** Its subject line. */
  subject: string;
}

/**
 * Compiles leasehold as it was at another commit (`--baseline=<ref>`), so that one run can measure
 * it next to the working tree under the same load. The commit's src/ and build settings come out
 * of git (`git archive`, so the working tree and the index are untouched) into
 * bench/.build/baseline-<commit>/, and compile there exactly as compileLeasehold compiles src/:
 * same tsc, same tsconfig.build.json (the commit's own), same non-TypeScript files. The output
 * resolves `redis`, `ioredis` and `wasmoon` from this checkout's node_modules (Node walks up from
 * bench/.build), so both builds run on the same client libraries. A commit never changes, so a
 * finished build is reused.
 */
export async function compileBaseline(ref: string): Promise<CompiledBaseline> {
  const git = async (...args: string[]) => (await run('git', args, { cwd: root })).stdout.trim();
  let full: string;
  try {
    full = await git('rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`);
  } catch {
    throw new Error(`--baseline=${ref}: not a commit in this repository`);
  }
  const commit = await git('rev-parse', '--short', full);
  const subject = await git('log', '-1', '--format=%s', full);
  const dir = join(buildDir, `baseline-${full}`);
  const out = join(dir, 'dist');
  const stamp = join(out, '.built');
  const entry = join(out, 'index.js');
  const note = `commit ${commit} (“${subject}”), compiled with its tsconfig.build.json`;
  if ((await mtime(stamp)) > 0) return { entry, note: `${note} (reused build)`, commit, subject };
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  // package.json too: the CLI reads its version from ../../package.json of its compiled file.
  const paths = ['src', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];
  const { stdout: tar } = await run('git', ['archive', '--format=tar', full, ...paths], {
    cwd: root,
    encoding: 'buffer',
    maxBuffer: 1 << 28,
  });
  const extract = run('tar', ['-x', '-C', dir]);
  extract.child.stdin?.end(tar);
  await extract;
  const diagnostics = await compile(dir, out);
  if ((await mtime(entry)) === 0)
    return { entry: undefined, note: `${note}: did not compile (${diagnostics})`, commit, subject };
  await writeFile(stamp, new Date().toISOString());
  const warning = diagnostics === '' ? '' : ` (tsc reported: ${diagnostics})`;
  return { entry, note: `${note}${warning}`, commit, subject };
}
