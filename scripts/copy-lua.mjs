// The build step tsc cannot do: copy the Lua scripts next to the compiled loader.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';

mkdirSync('dist/scripts', { recursive: true });
for (const file of readdirSync('src/scripts')) {
  if (file.endsWith('.lua')) copyFileSync(`src/scripts/${file}`, `dist/scripts/${file}`);
}
