// A node:test reporter that writes, when a run ends, each test file's time: the sum of its
// top-level tests' durations (a file's top-level tests run one after another). scripts/test.mjs
// adds it beside the spec reporter, writing to a file, and prints the slowest files of each run,
// so that a CI log says where its minutes went.
export default async function* fileTimes(source) {
  const times = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    if (data.nesting !== 0 || data.file === undefined) continue;
    times.set(data.file, (times.get(data.file) ?? 0) + (data.details?.duration_ms ?? 0));
  }
  for (const [file, ms] of [...times].sort((a, b) => b[1] - a[1])) yield `${Math.round(ms)}\t${file}\n`;
}
