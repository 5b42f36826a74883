// The layers of src/ hold: every import goes to the same layer or one below it, and no two files
// import each other, directly or round a circle. `npm test` runs this; docs/architecture.md
// draws the layers. `node scripts/check-layers.mjs --report` prints the graph's figures (files,
// imports, imports running up, circles) even when it holds.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Top first. A file belongs to the first layer whose pattern matches its path under src/. A
 * layer may import its own files and those of every layer below it, never one above.
 */
const LAYERS = [
  ['frameworks', /^frameworks\//],
  ['cli', /^(cli|demo)\//],
  ['api', /^(index|leasehold|diagnostics)\.ts$|^api\//],
  ['inspect', /^inspect\//],
  ['primitives', /^primitives\//],
  ['engine', /^(engine\/|lease\.ts$)/],
  ['options', /^options\//],
  ['runners', /^runners\//],
  ['postgres', /^postgres\//],
  ['memory', /^memory\//],
  ['drivers', /^driver\//],
  ['notify', /^notify\//],
  ['scripts', /^scripts\//],
  ['base', /^(errors|events)\.ts$|^base\//],
];

const root = resolve(new URL('..', import.meta.url).pathname, 'src');

function files(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Every relative import of every file, resolved to the file it names. */
function graph() {
  const edges = new Map();
  for (const file of files(root)) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set();
    for (const match of text.matchAll(IMPORT)) {
      const target = resolve(dirname(file), match[1] ?? match[2]);
      if (target.endsWith('.ts')) targets.add(relative(root, target));
    }
    edges.set(relative(root, file), targets);
  }
  return edges;
}

function layerOf(file) {
  const index = LAYERS.findIndex(([, pattern]) => pattern.test(file));
  if (index === -1) throw new Error(`scripts/check-layers.mjs: ${file} is in no layer`);
  return index;
}

/** Strongly connected components of more than one file (Tarjan): each is a circle of imports. */
function circles(edges) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

const edges = graph();
const upward = [];
let imports = 0;
for (const [file, targets] of edges) {
  for (const target of targets) {
    imports += 1;
    if (layerOf(target) < layerOf(file)) {
      upward.push(`${file} (${LAYERS[layerOf(file)][0]}) imports ${target} (${LAYERS[layerOf(target)][0]})`);
    }
  }
}
const loops = circles(edges);
const report = process.argv.includes('--report');
if (report || upward.length > 0 || loops.length > 0) {
  console.log(
    `src/: ${edges.size} files, ${imports} imports, ${upward.length} running up a layer, ${loops.length} circle(s)`,
  );
  for (const line of upward) console.log(`  up: ${line}`);
  for (const loop of loops) console.log(`  circle of ${loop.length}: ${loop.join(', ')}`);
}
if (upward.length > 0 || loops.length > 0) {
  console.log(`Layers, top first (docs/architecture.md): ${LAYERS.map(([name]) => name).join(' > ')}`);
  process.exit(1);
}
