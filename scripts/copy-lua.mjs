// The build step tsc cannot do: copy the Lua scripts (and the includes they share) next to the
// compiled loader, and the dashboard's page next to the compiled CLI.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

for (const dir of ['scripts', 'scripts/includes']) {
  mkdirSync(`dist/${dir}`, { recursive: true });
  for (const file of readdirSync(`src/${dir}`)) {
    if (file.endsWith('.lua')) copyFileSync(`src/${dir}/${file}`, `dist/${dir}/${file}`);
  }
}
// The dashboard's page: static HTML and JS, no front-end build (leasehold dashboard).
mkdirSync('dist/cli', { recursive: true });
copyFileSync('src/cli/dashboard.html', 'dist/cli/dashboard.html');
