import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DOCS, EXIT } from './exit.ts';

export const demoHelp = `Usage: leasehold demo

Several processes contend for one lock with a live view; then the holder is SIGKILLed and the
lock changes hands, to show loss detection and instant hand-over. Uses $REDIS_URL, else a
private redis-server when one is installed, else redis://127.0.0.1:6379.
`;

/** Runs the demo shipped in the package (src/demo, the lead's module exporting runDemo()). */
export async function demo(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(demoHelp);
    return EXIT.ok;
  }
  // A computed specifier: resolved at run time (dist/demo/main.js, or src/demo/main.ts via tsx).
  const specifier = new URL('../demo/main.js', import.meta.url).href;
  let mod: { runDemo?: () => Promise<number | undefined> };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch (error) {
    process.stderr.write(
      `leasehold: the demo is not available in this build (${(error as Error).message})\n`,
    );
    return EXIT.unavailable;
  }
  if (typeof mod.runDemo !== 'function') {
    process.stderr.write('leasehold: the demo module does not export runDemo()\n');
    return EXIT.software;
  }
  return (await mod.runDemo()) ?? EXIT.ok;
}

export const benchHelp = `Usage: leasehold bench [options]

Runs the side-by-side benchmarks from bench/ (in a source checkout of leasehold) against the
peer libraries. By default the short version (several minutes, \`--quick\`), with progress;
\`--full\` runs what \`npm run bench\` runs (minutes, every CPU core busy, rewrites
${DOCS}/benchmarks.md). Other options are passed on to bench/index.ts (see \`npm run bench -- --help\`).
`;

/**
 * Runs a module that lives outside the published package (examples/demo, bench) in a child
 * process: compiled JavaScript directly, TypeScript through tsx. The child shares the terminal,
 * so Ctrl-C reaches it; leasehold exits with its code.
 */
export async function delegate(what: 'bench', dir: string, argv: string[]): Promise<number> {
  // Never forwarded: a benchmark that does not know --help would start a long full run.
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(benchHelp);
    return EXIT.ok;
  }
  const entry = found(dir);
  if (entry === undefined) {
    process.stderr.write(
      `leasehold: the ${what} is not part of the installed package; it runs from a source checkout:\n` +
        `  git clone <leasehold repository> && cd leasehold && npm install && npx leasehold ${what}\n` +
        `  (looked for ${dir}/index.js and ${dir}/index.ts next to the package)\n`,
    );
    return EXIT.unavailable;
  }
  // The short run is the default here; `npm run bench` is the full one.
  const full = argv.includes('--full');
  const passed = argv.filter((arg) => arg !== '--full');
  if (!full && !passed.includes('--quick')) passed.unshift('--quick');
  const args = entry.endsWith('.ts') ? ['--import', 'tsx', entry, ...passed] : [entry, ...passed];
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  const ignore = () => {};
  // The child gets Ctrl-C from the terminal itself; leasehold waits for it to finish.
  process.on('SIGINT', ignore);
  try {
    return await new Promise<number>((resolve) => {
      child.once('error', () => resolve(EXIT.software));
      child.once('exit', (code, signal) => resolve(signal !== null ? 128 + 2 : (code ?? EXIT.software)));
    });
  } finally {
    process.off('SIGINT', ignore);
  }
}

function found(dir: string): string | undefined {
  for (const file of ['index.js', 'index.ts']) {
    const path = fileURLToPath(new URL(`../../${dir}/${file}`, import.meta.url));
    if (existsSync(path)) return path;
  }
  return undefined;
}
