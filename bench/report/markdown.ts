import type { ContenderInfo } from '../contenders/types.ts';
import type { Results } from '../results.ts';
import type { Chart } from './charts.ts';
import { fmtBytes, fmtMs, fmtNum, ratio, table } from './format.ts';
import { headline, lossCell } from './headline.ts';
import { progress } from './progress.ts';
import { versus } from './versus.ts';

const isLeasehold = (c: ContenderInfo) => c.library === 'leasehold';

function chartLink(charts: Chart[], file: string): string {
  const chart = charts.find((c) => c.file === file);
  return chart === undefined ? '' : `\n![${chart.title}](benchmarks/${chart.file})\n`;
}

function settingsLine(settings: Record<string, number>): string {
  return Object.entries(settings)
    .map(([k, v]) => `\`${k}\` ${typeof v === 'number' ? fmtNum(v, Number.isInteger(v) ? 0 : 2) : v}`)
    .join(', ');
}

/** The issue's targets, each with the measured value and whether it is met. */
function targets(results: Results): string {
  const s = results.scenarios;
  const ours = results.contenders.filter((c) => isLeasehold(c) && c.unavailable === undefined);
  const peers = results.contenders.filter((c) => !isLeasehold(c) && c.unavailable === undefined);
  const rows: string[][] = [];
  const verdict = (ok: boolean | undefined) => (ok === undefined ? '–' : ok ? 'met' : 'not met');
  for (const c of ours) {
    const h = s.handoff?.contenders[c.id];
    if (h !== undefined && s.handoff !== undefined) {
      const best = Math.min(
        ...peers.map((p) => s.handoff?.contenders[p.id]?.gap.p50 ?? Number.POSITIVE_INFINITY),
      );
      rows.push([
        c.label,
        'handoff gap p50 ≤ 0.15 ms, p99 ≤ 1 ms',
        `${fmtMs(h.gap.p50)} / ${fmtMs(h.gap.p99)} ms`,
        verdict(h.gap.p50 <= 0.15 && h.gap.p99 <= 1),
      ]);
      const floor = s.floor?.bareHandoff;
      if (floor !== undefined) {
        rows.push([
          c.label,
          'handoff gap p50 as a multiple of the in-process floor (section 7: one process, one waiter, bare-socket push + round trip)',
          `${ratio(h.gap.p50, floor.p50)} (floor p50 ${fmtMs(floor.p50)} ms)`,
          '–',
        ]);
      }
      const same = s.handoff.floor;
      if (same !== undefined) {
        rows.push([
          c.label,
          'handoff gap p50 ≤ 2× the cross-process floor (section 2: the same processes and loop, bare sockets, leasehold’s scripts)',
          `${ratio(h.gap.p50, same.gap.p50)} (floor p50 ${fmtMs(same.gap.p50)} ms)`,
          verdict(h.gap.p50 <= 2 * same.gap.p50),
        ]);
      }
      rows.push([
        c.label,
        'handoff gap p50 ≥ 20× better than the best peer',
        `${ratio(best, h.gap.p50)} (best peer p50 ${fmtMs(best)} ms)`,
        verdict(best / h.gap.p50 >= 20),
      ]);
    }
    const loss = s.loss?.contenders[c.id];
    if (loss !== undefined && s.loss !== undefined) {
      const cap = s.loss.settings['cap'] ?? 0;
      for (const kind of ['del', 'takeover'] as const) {
        const st = loss[kind];
        rows.push([
          c.label,
          `loss detection after ${kind === 'del' ? 'DEL' : 'takeover'}: p99 ≤ 5 ms`,
          lossCell(st, cap),
          verdict(st.never === 0 && st.n > 0 && st.p99 <= 5),
        ]);
      }
    }
    const crash = s.crash?.contenders[c.id];
    if (crash !== undefined) {
      rows.push([
        c.label,
        'crash recovery: acquire ≤ 2 ms (p50) after the dead holder’s TTL',
        `${fmtMs(crash.excess.p50)} ms`,
        verdict(crash.excess.p50 <= 2),
      ]);
    }
    const un = s.uncontended?.contenders[c.id];
    if (un !== undefined && s.uncontended !== undefined) {
      const same = peers.filter((p) => p.client === c.client);
      const pool = same.length > 0 ? same : peers;
      const best = Math.max(...pool.map((p) => s.uncontended?.contenders[p.id]?.parallel.opsPerSecond ?? 0));
      const inFlight = s.uncontended.settings['inFlight'];
      rows.push([
        c.label,
        `uncontended throughput (${inFlight} in flight) ≥ best peer ${same.length > 0 ? `on ${c.client}` : '(no peer on this client: all peers)'}`,
        `${fmtNum(un.parallel.opsPerSecond)}/s vs ${fmtNum(best)}/s (${ratio(un.parallel.opsPerSecond, best)})`,
        verdict(un.parallel.opsPerSecond >= best),
      ]);
    }
    const idle = s.idle?.contenders[c.id];
    if (idle !== undefined) {
      const best = Math.min(
        ...peers.map((p) => s.idle?.contenders[p.id]?.commandsPerSecond ?? Number.POSITIVE_INFINITY),
      );
      rows.push([
        c.label,
        'idle load ≤ 1 % of the best polling peer',
        `${fmtNum(idle.commandsPerSecond)} vs ${fmtNum(best)} commands/s (${fmtNum((idle.commandsPerSecond / best) * 100, 2)} %)`,
        verdict(idle.commandsPerSecond <= best / 100),
      ]);
    }
    const scale = s.scale?.contenders[c.id];
    if (scale !== undefined && s.scale !== undefined) {
      const cycle = (s.scale.settings['leaseTtl'] ?? 0) / 3 / 1000;
      const reads = scale.held.readsPerSecond * cycle;
      const bytes = scale.held.inputBytesPerSecond * cycle;
      // Redis reads a client's socket 16 KiB at a time: one pipeline of B bytes shows as about
      // B / 16 KiB reads, separate round trips as one read each at least.
      const onePipeline = Math.max(1, Math.ceil(bytes / 16_384));
      rows.push([
        c.label,
        `${fmtNum(scale.held.leases, 0)} held leases: one round trip per extension cycle (batched)`,
        `${fmtNum(reads, 1)} socket reads per cycle (ttl/3) carrying ${fmtBytes(bytes)}; one pipeline of that size ≈ ${onePipeline} reads`,
        verdict(reads <= onePipeline * 1.5 + 1),
      ]);
      rows.push([
        c.label,
        `${fmtNum(scale.held.leases, 0)} held leases: ≤ 2 KiB of memory each`,
        `${fmtBytes(scale.held.heapPerLease)} heap (${fmtBytes(scale.held.rssPerLease)} RSS)`,
        verdict(scale.held.heapPerLease <= 2048),
      ]);
    }
  }
  if (rows.length === 0) return '_leasehold was not measured in this run._';
  return table(['contender', 'target (issue 3)', 'measured', 'verdict'], rows, ['l', 'l', 'r', 'l']);
}

function contendersSection(results: Results): string {
  const rows = results.contenders.map((c) => [
    c.label,
    `${c.library} ${c.version}`,
    `${c.client} ${c.clientVersion}`,
    `\`${c.api}\``,
    c.lossSignal,
    c.waiting,
    Object.entries(c.settings)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join('; '),
    c.unavailable ?? '',
  ]);
  return table(
    ['contender', 'library', 'client', 'API used', 'loss reported by', 'waiting', 'settings', 'not run'],
    rows,
    ['l', 'l', 'l', 'l', 'l', 'l', 'l', 'l'],
  );
}

/** docs/benchmarks.md: every number comes from `results`; nothing here is typed in by hand. */
export function markdown(results: Results, charts: Chart[], baseline?: Results): string {
  const s = results.scenarios;
  const m = results.machine;
  const label = new Map(results.contenders.map((c) => [c.id, c.label]));
  const name = (id: string) => label.get(id) ?? id;
  const out: string[] = [];
  out.push(
    '# Benchmarks',
    '',
    `<!-- Written by \`${results.command}\` (bench/index.ts). Do not edit: rerun the benchmark. -->`,
    '',
    `Measured ${m.date.slice(0, 10)} (${results.mode} run, ${fmtNum(results.durationSeconds / 60, 1)} min) at commit ` +
      `\`${m.commit}\`; raw numbers in [bench/results/latest.json](../bench/results/latest.json). ` +
      'Every contender runs against the same redis-server in the same run, interleaved round by round, so that ' +
      'machine noise hits all of them alike. Reproduce with `npm run bench`; `npm run bench -- --quick` ' +
      'runs the same scenarios with smaller samples in about a minute and leaves this page alone; ' +
      '`npm run bench -- --baseline=<commit>` also builds leasehold as it was at that commit and measures ' +
      'it next to this tree in the same run (contenders `leasehold-baseline-*`, labelled ' +
      '“leasehold @ <commit>”), then prints a before/after table (`npm run bench -- --help`).',
    '',
    '## Summary',
    '',
    headline(results),
    '',
    ...(results.baseline === undefined || versus(results) === ''
      ? []
      : [
          `## This tree against \`${results.baseline.commit}\` (same run)`,
          '',
          `Baseline: ${results.baseline.note}. Round medians, with the range of the rounds in brackets.`,
          '',
          versus(results),
          '',
        ]),
    'Handoff: gap from a release in one process to the next acquire in another. Loss: from an external ' +
      '`DEL` of the lock key, or a takeover, to the holder being told. Crash: how long a waiter waits beyond ' +
      'the expiry of a SIGKILLed holder’s key. Idle: Redis commands/s while waiters wait on a held lock.',
    '',
    '## Targets',
    '',
    targets(results),
    '',
    progress(results, baseline),
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['CPU', `${m.cpuModel} × ${m.cpus}`],
        ['memory', `${m.memoryGiB} GiB (${m.freeMemoryGiB} GiB free at start)`],
        ['OS', m.os],
        ['Node.js', m.node],
        ['Redis', m.redisServer],
        [
          'load average (1, 5, 15 min)',
          `${m.loadAverage.join(', ')} at start; ${results.loadAverageAtEnd.join(', ')} at end`,
        ],
      ],
      ['l', 'l'],
    ),
    '',
    'Each scenario starts its own `redis-server` (default settings, no persistence) on a free loopback port; ' +
      'clients, workers and Redis share the machine.',
    '',
    '## Contenders',
    '',
    'Each library is used the way its README recommends, with its default settings; the table lists the ' +
      'effective values, read back from the library where it exposes them. Every scenario passes the same ' +
      '`ttl` to all contenders. Where a library’s acquire gives up after its own retry budget, the benchmark ' +
      'calls it again, which is what a caller that must get the lock does.',
    '',
    contendersSection(results),
    '',
    '## Method',
    '',
    '- Rounds: contenders run one after another inside each round, in an order rotated every round; a ' +
      'scenario reports the median over rounds of each round’s figure (p50, p99, rate). Loss detection ' +
      'and crash recovery have few samples per round, so their percentiles are over all samples pooled.',
    '- Timestamps that cross processes are `performance.timeOrigin + performance.now()`; the handoff ' +
      'scenario measures each worker’s clock offset over IPC and reports it.',
    '- Redis load comes from `INFO` deltas: `total_commands_processed` counts a script call *and* every ' +
      'command the script runs, `total_reads_processed` counts socket reads (at least one per round trip).',
    '- Percentiles are linear-interpolated; with n samples, p99 of fewer than 100 samples is close to the maximum.',
    '',
  );

  if (s.uncontended !== undefined) {
    const u = s.uncontended;
    out.push(
      '## 1. Uncontended acquire + release',
      '',
      'One client per contender acquires and releases a free lock: one pair at a time on one name, then ' +
        `${u.settings['inFlight']} pairs in flight on distinct names over one connection. Latency is one ` +
        'acquire plus its release.',
      '',
      `Settings: ${settingsLine(u.settings)}.`,
      '',
      table(
        [
          'contender',
          '1 in flight p50',
          'p99',
          'pairs/s',
          `${u.settings['inFlight']} in flight p50`,
          'p99',
          'pairs/s',
        ],
        Object.entries(u.contenders).map(([id, r]) => [
          name(id),
          `${fmtMs(r.sequential.p50)} ms`,
          `${fmtMs(r.sequential.p99)} ms`,
          fmtNum(r.sequential.opsPerSecond),
          `${fmtMs(r.parallel.p50)} ms`,
          `${fmtMs(r.parallel.p99)} ms`,
          fmtNum(r.parallel.opsPerSecond),
        ]),
      ),
      chartLink(charts, 'uncontended.svg'),
    );
  }

  if (s.handoff !== undefined) {
    const h = s.handoff;
    out.push(
      '## 2. Handoff between processes',
      '',
      `${h.settings['workers']} worker processes contend for one name. Each holds the lock ${h.settings['hold']} ms, ` +
        'releases it, then steps aside until another worker has acquired it, so at every release the others ' +
        'are already waiting. The gap runs from the moment the holder calls release to the moment another ' +
        'process’s acquire resolves; handoffs/s counts acquisitions by a process other than the last holder. ' +
        '`overlaps` counts acquisitions reported while another process still held the lock (should be 0).',
      '',
      `Settings: ${settingsLine(h.settings)}. Worker clock offsets from the parent: ` +
        `${h.clockOffsets.map((o) => `${fmtNum(o.offset * 1000, 0)} ± ${fmtNum(o.error * 1000, 0)} µs`).join(', ')}.`,
      '',
      table(
        ['contender', 'gap p50', 'gap p99', 'handoffs/s', 'handoffs measured', 'overlaps'],
        Object.entries(h.contenders).map(([id, r]) => [
          name(id),
          `${fmtMs(r.gap.p50)} ms`,
          `${fmtMs(r.gap.p99)} ms`,
          fmtNum(r.handoffsPerSecond),
          fmtNum(r.gap.n, 0),
          fmtNum(r.overlaps, 0),
        ]),
      ),
      ...(h.floor === undefined
        ? []
        : [
            '',
            `The cross-process floor, in the same worker processes, the same loop and the same rounds: ` +
              'leasehold’s own acquire.lua and release.lua over bare RESP3 sockets with CLIENT TRACKING ON, ' +
              'no client library and no lock library, every waiting process retrying on every push ' +
              `(bench/contenders/floor.ts): gap p50 ${fmtMs(h.floor.gap.p50)} ms, p99 ${fmtMs(h.floor.gap.p99)} ms, ` +
              `${fmtNum(h.floor.handoffsPerSecond)} handoffs/s over ${fmtNum(h.floor.gap.n, 0)} handoffs, ` +
              `${fmtNum(h.floor.overlaps, 0)} overlaps. What a lock that wakes every waiting process pays here ` +
              'before any client library: the in-process floor of section 7 has no second process to wake.',
          ]),
      chartLink(charts, 'handoff.svg'),
    );
  }

  if (s.loss !== undefined) {
    const l = s.loss;
    const cap = l.settings['cap'] ?? 0;
    out.push(
      '## 3. Loss detection',
      '',
      `A holder takes a lock with ttl ${fmtNum(l.settings['ttl'], 0)} ms; at a time spread over 10–90 % of the ` +
        'ttl, another connection deletes the key, or takes the lock over. The delay runs from the moment that ' +
        'command is sent to the moment the holder is told (signal abort or callback). Samples that are not told ' +
        `within ${fmtNum(cap / 1000, 0)} s count as "never". The takeover is leasehold’s \`forceAcquire\`; the ` +
        'peers have no takeover call, so for them another connection overwrites the key with its own value ' +
        '(`SET key other PX ttl`), which is what any other owner’s write looks like.',
      '',
      `Settings: ${settingsLine(l.settings)}.${l.concurrent ? ' Quick run: the contenders of a round ran at the same time.' : ''}`,
      '',
      table(
        ['contender', 'after DEL p50', 'p99', 'after takeover p50', 'p99', 'samples'],
        Object.entries(l.contenders).map(([id, r]) => [
          name(id),
          lossCell(r.del, cap, 'p50'),
          lossCell(r.del, cap),
          lossCell(r.takeover, cap, 'p50'),
          lossCell(r.takeover, cap),
          `${r.del.n + r.del.never} + ${r.takeover.n + r.takeover.never}`,
        ]),
      ),
      chartLink(charts, 'loss.svg'),
    );
  }

  if (s.crash !== undefined) {
    const c = s.crash;
    out.push(
      '## 4. Crash recovery',
      '',
      `A holder process takes ${c.settings['samples']} locks (ttl ${fmtNum(c.settings['ttl'], 0)} ms) a little apart; a ` +
        'second process waits for all of them; the holder is SIGKILLed. Each key’s expiry is read with `PTTL` ' +
        'right after the kill. The figure is the waiter’s acquire time minus that expiry: what the crash costs ' +
        'beyond the TTL the holder had left. `early` counts acquisitions more than 1 ms before the expiry ' +
        '(should be 0).',
      '',
      `Settings: ${settingsLine(c.settings)}.${c.concurrent ? ' Quick run: the contenders of a round ran at the same time.' : ''}`,
      '',
      table(
        ['contender', 'beyond TTL p50', 'p99', 'max', 'TTL left at kill p50', 'samples', 'early'],
        Object.entries(c.contenders).map(([id, r]) => [
          name(id),
          `${fmtMs(r.excess.p50)} ms`,
          `${fmtMs(r.excess.p99)} ms`,
          `${fmtMs(r.excess.max)} ms`,
          `${fmtMs(r.remaining.p50)} ms`,
          fmtNum(r.excess.n, 0),
          fmtNum(r.early, 0),
        ]),
      ),
      chartLink(charts, 'crash.svg'),
    );
  }

  if (s.idle !== undefined) {
    const i = s.idle;
    out.push(
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
    );
  }

  if (s.scale !== undefined) {
    const sc = s.scale;
    out.push(
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
    );
  }

  if (s.floor !== undefined) {
    const f = s.floor;
    out.push(
      '## 7. The floor',
      '',
      'What the server and the client libraries manage at best on the same kind of server, to read every ' +
        'result above as a ratio to the physical limit. A handoff cannot beat one invalidation push plus ' +
        'one round trip; an uncontended acquire + release costs two round trips.',
      '',
      table(
        ['measure', 'p50', 'p99'],
        [
          ['PING round trip, bare socket', `${fmtMs(f.ping.raw.p50)} ms`, `${fmtMs(f.ping.raw.p99)} ms`],
          ['PING round trip, ioredis', `${fmtMs(f.ping.ioredis.p50)} ms`, `${fmtMs(f.ping.ioredis.p99)} ms`],
          [
            'PING round trip, node-redis',
            `${fmtMs(f.ping.nodeRedis.p50)} ms`,
            `${fmtMs(f.ping.nodeRedis.p99)} ms`,
          ],
          [
            'handoff, bare sockets in one process: DEL sent → invalidation push → SET NX answered',
            `${fmtMs(f.bareHandoff?.p50)} ms`,
            `${fmtMs(f.bareHandoff?.p99)} ms`,
          ],
        ],
      ),
      '',
      table(
        ['client EVALSHA of a lock-shaped script', 'calls/s'],
        [
          [`ioredis, ${f.evalsha.inFlight} in flight`, fmtNum(f.evalsha.ioredis)],
          [`node-redis, ${f.evalsha.inFlight} in flight`, fmtNum(f.evalsha.nodeRedis)],
        ],
      ),
      '',
      table(
        ['redis-benchmark (50 clients)', 'test', 'requests/s', 'p50', 'p99'],
        f.redisBenchmark.map((r) => [
          `\`${r.command}\``,
          r.test,
          fmtNum(r.rps),
          `${fmtMs(r.p50)} ms`,
          `${fmtMs(r.p99)} ms`,
        ]),
        ['l', 'l', 'r', 'r', 'r'],
      ),
      '',
      `The lock-shaped script: \`${f.script}\`.`,
      '',
    );
  }

  const errors = Object.entries(results.errors);
  const failures = Object.entries(results.failures ?? {}).flatMap(([scenario, byContender]) =>
    Object.entries(byContender).map(
      ([id, error]) => `- **${scenario}**, ${name(id)}: \`${error.split('\n')[0]}\``,
    ),
  );
  if (errors.length > 0 || failures.length > 0) {
    out.push('## Failures in this run', '');
    for (const [id, error] of errors)
      out.push(`- **${id}** (whole scenario): \`${(error ?? '').split('\n')[0]}\``);
    out.push(...failures, '');
  }
  const engines = results.contenders
    .filter((c) => typeof c.settings['engines'] === 'string')
    .map(
      (c) =>
        `- ${c.label}: ${String(c.settings['engines'])}${c.unavailable === undefined ? '; every scenario above ran it.' : ''}`,
    );
  out.push(
    '## Reading these numbers',
    '',
    ...engines,
    '- One small machine runs Redis, the clients and the workers at once; absolute figures move with its ' +
      'load (see the load average above). Ratios between contenders in the same run are the robust part.',
    '- The peers learn of a lost lock only when their next extension fails, so their detection delay scales ' +
      'with the ttl; with their default ttls (redis-semaphore 10 s, redlock-universal 30 s) it is seconds to tens of seconds.',
    '- Polling peers trade idle load against handoff latency through their retry interval; leasehold ' +
      'waits on invalidation pushes and a timer at the holder’s remaining TTL instead.',
    '',
  );
  return out.join('\n');
}
