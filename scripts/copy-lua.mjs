// The build step tsc cannot do: copy the Lua scripts next to the compiled loader, and the
// dashboard's page next to the compiled CLI.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

mkdirSync('dist/scripts', { recursive: true });
for (const file of readdirSync('src/scripts')) {
  if (file.endsWith('.lua')) copyFileSync(`src/scripts/${file}`, `dist/scripts/${file}`);
}
// The dashboard's page: static HTML and JS, no front-end build (leasehold dashboard).
mkdirSync('dist/cli', { recursive: true });
copyFileSync('src/cli/dashboard.html', 'dist/cli/dashboard.html');
