// Sections 5 and 6 of docs/benchmarks.md: what waiting and holding cost Redis and the process,
// for a few waiters and for many leases and waiters.
import type { Results } from '../results.ts';
import type { Chart } from './charts.ts';
import { fmtBytes, fmtNum, table } from './format.ts';
import { chartLink, contenderName } from './section.ts';

/** 5. Idle load: Redis and CPU while callers wait on a held lock. */
export function idleSection(results: Results, charts: Chart[]): string[] {
  const i = results.scenarios.idle;
  if (i === undefined) return [];
  const name = contenderName(results);
  return [
    '## 5. Idle load',
    '',
    `This process holds a lock (ttl ${fmtNum(i.settings['ttl'], 0)} ms, automatic extension running) while ` +
      `${i.settings['waiters']} callers in one other process wait for it. Measured over ` +
      `${fmtNum((i.settings['windowMs'] ?? 0) / 1000, 1)} s after ${fmtNum((i.settings['settleMs'] ?? 0) / 1000, 1)} s of settling.`,
    '',
    table(
      [
        'contender',
        'Redis commands/s',
        'script calls/s',
        'socket reads/s',
        'Redis CPU',
        'waiting process CPU',
      ],
      Object.entries(i.contenders).map(([id, r]) => {
        const scripts = r.rounds.map((x) => x.scriptsPerSecond).sort((a, b) => a - b);
        return [
          name(id),
          fmtNum(r.commandsPerSecond),
          fmtNum(scripts[Math.floor(scripts.length / 2)]),
          fmtNum(r.readsPerSecond),
          `${fmtNum(r.redisCpuPercent, 1)} %`,
          `${fmtNum(r.waiterCpuPercent, 1)} %`,
        ];
      }),
    ),
    chartLink(charts, 'idle.svg'),
  ];
}

/** 6. Scale: held leases and waiters by the thousand. */
export function scaleSection(results: Results, charts: Chart[]): string[] {
  const sc = results.scenarios.scale;
  if (sc === undefined) return [];
  const name = contenderName(results);
  return [
    '## 6. Scale',
    '',
    'One pass per contender, in report order, each with a fresh worker process.',
    '',
    `**Held leases.** One worker process acquires ${fmtNum(sc.settings['leases'], 0)} locks on distinct names ` +
      `(ttl ${fmtNum(sc.settings['leaseTtl'], 0)} ms, 64 acquisitions in flight) and keeps them; after ` +
      `${fmtNum((sc.settings['warmupMs'] ?? 0) / 1000, 1)} s (so that every library’s first extension is behind it), Redis load and the process’s CPU are measured over ${fmtNum((sc.settings['windowMs'] ?? 0) / 1000, 1)} s. ` +
      'Memory per lease is the growth of the JS heap (plus array buffers) after a forced GC, divided by ' +
      'the number of leases; RSS growth is shown too. `lost` counts leases whose loss signal fired while held (should be 0).',
    '',
    table(
      [
        'contender',
        'Redis commands/s',
        'script calls/s',
        'socket reads/s',
        'Redis CPU',
        'process CPU',
        'heap / lease',
        'RSS / lease',
        'Redis memory / lease',
        'acquire all',
        'lost',
      ],
      Object.entries(sc.contenders).map(([id, r]) => [
        name(id),
        fmtNum(r.held.commandsPerSecond),
        fmtNum(r.held.scriptsPerSecond),
        fmtNum(r.held.readsPerSecond),
        `${fmtNum(r.held.cpuPercent, 1)} %`,
        `${fmtNum(r.held.processCpuPercent, 1)} %`,
        fmtBytes(r.held.heapPerLease),
        fmtBytes(r.held.rssPerLease),
        fmtBytes(r.held.redisMemoryPerLease),
        `${fmtNum(r.held.acquireMs / 1000, 2)} s`,
        fmtNum(r.held.lost, 0),
      ]),
    ),
    '',
    `**Waiters.** This process holds ${fmtNum(sc.settings['waiters'], 0)} locks (ttl 60 s, so that its own ` +
      'extensions stay out of the window); a worker process starts one waiter on each. After ' +
      `${fmtNum((sc.settings['settleMs'] ?? 0) / 1000, 1)} s, memory is sampled and Redis load measured over ` +
      `${fmtNum((sc.settings['waiterWindowMs'] ?? 0) / 1000, 1)} s.`,
    '',
    table(
      [
        'contender',
        'Redis commands/s',
        'socket reads/s',
        'Redis CPU',
        'process CPU',
        'heap / waiter',
        'RSS / waiter',
      ],
      Object.entries(sc.contenders).map(([id, r]) => [
        name(id),
        fmtNum(r.waiters.commandsPerSecond),
        fmtNum(r.waiters.readsPerSecond),
        `${fmtNum(r.waiters.cpuPercent, 1)} %`,
        `${fmtNum(r.waiters.processCpuPercent, 1)} %`,
        fmtBytes(r.waiters.heapPerWaiter),
        fmtBytes(r.waiters.rssPerWaiter),
      ]),
    ),
    chartLink(charts, 'memory.svg'),
  ];
}
