// Promises, immediates and ticks one uncontended acquire + release creates, counted with an
// async_hooks init hook: a figure of the library's own hot path that does not depend on how busy
// the machine is (throughput does), so a change to the hot path can be judged on a shared host.
//
//   node --import tsx bench/promises.ts [--baseline=<commit>] [--ops 2000]
//
// Each variant runs in a process of its own (the hook sees only that process), against one
// redis-server this script starts, on both clients: this tree compiled as users run it, and with
// --baseline the same build of that commit.
import { execFile } from 'node:child_process';
import { parseArgs, promisify } from 'node:util';
import { compileBaseline, compileLeasehold } from './lib/build.ts';
import { Bench } from './lib/redis.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    ops: { type: 'string', default: '2000' },
    child: { type: 'string' },
  },
});
const ops = Number(values.ops);
if (!Number.isInteger(ops) || ops < 1) throw new TypeError('--ops must be a positive integer');

if (values.child !== undefined) {
  // In the child: `--child <entry>|<driver>|<url>`.
  const [entry, driver, url] = values.child.split('|') as [string, string, string];
  const { createHook } = await import('node:async_hooks');
  const { Leasehold } = await import(entry);
  const lh = await Leasehold.connect({ url, driver, prefix: `promises-${process.pid}` });
  for (let i = 0; i < 500; i++) await (await lh.acquire('warm')).release();
  const counts: Record<string, number> = {};
  const hook = createHook({
    init(_id: number, type: string) {
      counts[type] = (counts[type] ?? 0) + 1;
    },
  });
  hook.enable();
  for (let i = 0; i < ops; i++) await (await lh.acquire(`n${i % 64}`)).release();
  hook.disable();
  await lh.close();
  process.stdout.write(JSON.stringify(counts));
  process.exit(0);
}

const builds: [string, string | undefined][] = [['this tree', (await compileLeasehold()).entry]];
if (values.baseline !== undefined)
  builds.push([`@ ${values.baseline}`, (await compileBaseline(values.baseline)).entry]);
const bench = await Bench.start();
try {
  console.log('| leasehold | driver | promises | immediates | ticks | timers |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: |');
  for (const driver of ['node-redis', 'ioredis']) {
    for (const [label, entry] of builds) {
      if (entry === undefined) throw new Error(`leasehold ${label} did not compile`);
      const child = [entry, driver, bench.url].join('|');
      const { stdout } = await promisify(execFile)(process.execPath, [
        '--import',
        'tsx',
        new URL(import.meta.url).pathname,
        '--ops',
        String(ops),
        '--child',
        child,
      ]);
      const c = JSON.parse(stdout) as Record<string, number>;
      const per = (type: string) => ((c[type] ?? 0) / ops).toFixed(2);
      console.log(
        `| ${label} | ${driver} | ${per('PROMISE')} | ${per('Immediate')} | ${per('TickObject')} | ${per('Timeout')} |`,
      );
    }
  }
} finally {
  await bench.stop();
}
