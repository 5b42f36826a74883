import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const src = join(root, 'src');
/** Private build output (bench/.gitignore): never the package's own dist/. */
const out = join(root, 'bench/.build/leasehold');
const stamp = join(out, '.built');

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? files(join(dir, e.name)) : Promise.resolve([join(dir, e.name)]))),
  );
  return nested.flat();
}

export interface CompiledLeasehold {
  /** index.js of the compiled copy, or undefined when leasehold runs from src through tsx. */
  entry: string | undefined;
  note: string;
}

/**
 * Compiles src/ with the package's own build settings into bench/.build, so that leasehold is
 * measured as users run it (plain JavaScript), like the peers, and not through tsx's on-the-fly
 * transform (which costs it 10-30 % of its uncontended throughput here). Reused while no file in
 * src/ is newer than the last build.
 */
export async function compileLeasehold(): Promise<CompiledLeasehold> {
  const sources = await files(src);
  const newest = Math.max(...(await Promise.all(sources.map(async (f) => (await stat(f)).mtimeMs))));
  const built = await stat(stamp).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  const entry = join(out, 'index.js');
  if (built >= newest) return { entry, note: 'compiled from src/ with tsconfig.build.json (reused build)' };
  await rm(out, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const args = [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out, '--declaration', 'false'];
  args.push('--declarationMap', 'false', '--sourceMap', 'false');
  let diagnostics = '';
  try {
    await run(process.execPath, args, { cwd: root, maxBuffer: 1 << 22 });
  } catch (error) {
    diagnostics = String((error as { stdout?: string }).stdout ?? error).split('\n')[0] ?? '';
  }
  const emitted = await stat(entry).then(
    () => true,
    () => false,
  );
  if (!emitted)
    return { entry: undefined, note: `src/ did not compile (${diagnostics}); run from src/ through tsx` };
  for (const file of sources.filter((f) => !f.endsWith('.ts'))) {
    const target = join(out, relative(src, file));
    await mkdir(dirname(target), { recursive: true });
    await copyFile(file, target);
  }
  await writeFile(stamp, new Date().toISOString());
  const warning = diagnostics === '' ? '' : ` (tsc reported: ${diagnostics})`;
  return { entry, note: `compiled from src/ with tsconfig.build.json${warning}` };
}
