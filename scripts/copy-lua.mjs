// The build step tsc cannot do: copy the Lua scripts (and the includes they share) next to the
// compiled loader.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

for (const dir of ['scripts', 'scripts/includes']) {
  mkdirSync(`dist/${dir}`, { recursive: true });
  for (const file of readdirSync(`src/${dir}`)) {
    if (file.endsWith('.lua')) copyFileSync(`src/${dir}/${file}`, `dist/${dir}/${file}`);
  }
}
