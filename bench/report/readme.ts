import { readFile, writeFile } from 'node:fs/promises';
import type { Results } from '../results.ts';
import { headline } from './headline.ts';

const START = '<!-- headline:start -->';
const END = '<!-- headline:end -->';

/**
 * Writes the headline table into README.md between its markers, so that the front page's
 * numbers come from the last full run like docs/benchmarks.md does, never from a hand edit.
 */
export async function writeReadmeHeadline(results: Results, file = 'README.md'): Promise<void> {
  const text = await readFile(file, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return;
  const m = results.machine;
  const when = `${m.date.slice(0, 10)}, ${m.cpus} × ${m.cpuModel}, Node ${m.node}`;
  const block = [
    START,
    `Measured by \`npm run bench\` (${when}): every library against the same redis-server in one`,
    'run, interleaved. All figures, charts and the targets we have not met yet are in',
    '[docs/benchmarks.md](docs/benchmarks.md).',
    '',
    headline(results),
    END,
  ].join('\n');
  await writeFile(file, text.slice(0, start) + block + text.slice(end + END.length));
}
