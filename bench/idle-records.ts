// Idle load of the waiters that inspection records in Redis (issue 26 item 2): election
// candidates, multiLock waiters, and for comparison the mutex waiters of one Redis (registered
// for direct grants). 20 waiters wait on a held name for 10 s; the counters are Redis's own
// (INFO): script calls and socket reads (what clients send), and every command INFO counts,
// the ones each script runs included (what Redis does). About 40 s.
//   node --import tsx bench/idle-records.ts [--src=<another tree's src/index.ts>]
// `--src` measures another build side by side, e.g. a worktree of the commit before the records:
//   git worktree add /tmp/before 5f19ad0 && ln -s "$PWD/node_modules" /tmp/before/node_modules
//   node --import tsx bench/idle-records.ts --src=/tmp/before/src/index.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Bench } from './lib/redis.ts';

const { values } = parseArgs({ options: { src: { type: 'string' } } });
const src = values.src ?? new URL('../src/index.ts', import.meta.url).pathname;
const { Leasehold } = (await import(src)) as typeof import('../src/index.ts');
type Instance = Awaited<ReturnType<typeof Leasehold.connect>>;

const WAITERS = 20;
const WINDOW_MS = 10_000;
const TTL = 30_000;
const KINDS = ['election', 'multiLock', 'mutex'] as const;

/** Starts the held name and WAITERS waiters of `kind`; returns how to end them. */
async function scene(kind: (typeof KINDS)[number], url: string): Promise<() => Promise<void>> {
  const prefix = `idle-${kind}`;
  const holder = await Leasehold.connect({ url, prefix });
  const waiters: Instance[] = [];
  for (let i = 0; i < WAITERS; i++) waiters.push(await Leasehold.connect({ url, prefix }));
  const stop = new AbortController();
  const options = { ttl: TTL, signal: stop.signal };
  const held =
    kind === 'election'
      ? await holder.election('e').campaign('leader', { ttl: TTL })
      : await holder.acquire(kind === 'mutex' ? 'm' : 'a', { ttl: TTL });
  const waiting = waiters.map((w, i) =>
    (kind === 'election'
      ? w.election('e').campaign(`candidate-${i}`, options)
      : kind === 'multiLock'
        ? w.multiLock(['a', 'b']).acquire(options)
        : w.acquire('m', options)
    ).catch(() => undefined),
  );
  return async () => {
    stop.abort();
    await Promise.all(waiting);
    await held.release(); // a Term's release() is its resign()
    await Promise.all([holder, ...waiters].map((lh) => lh.close()));
  };
}

const bench = await Bench.start();
try {
  const version = (await bench.info('server'))['redis_version'];
  console.log(`${src}: ${WAITERS} waiters on a held name, ${WINDOW_MS / 1000} s each, Redis ${version}`);
  console.log('kind       scripts/s  reads/s  commands/s (incl. in scripts)  Redis CPU %');
  for (const kind of KINDS) {
    const end = await scene(kind, bench.url);
    await sleep(1_000); // every waiter has made its first attempts
    const before = await bench.counters();
    await sleep(WINDOW_MS);
    const rates = Bench.rates(before, await bench.counters());
    await end();
    const row = [
      kind.padEnd(10),
      rates.scriptsPerSecond.toFixed(1).padStart(9),
      rates.readsPerSecond.toFixed(1).padStart(8),
      rates.commandsPerSecond.toFixed(1).padStart(30),
      rates.cpuPercent.toFixed(2).padStart(12),
    ];
    console.log(row.join(' '));
  }
} finally {
  await bench.admin.quit();
  await bench.server.stop();
}
