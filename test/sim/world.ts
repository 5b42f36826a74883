// One simulation run (test/sim/): a seed decides everything. Several Leasehold instances (each a
// "process") share one simulated server over a simulated network (network.ts), under a virtual
// clock (@sinonjs/fake-timers: Date, performance.now, setTimeout, setImmediate) that only the
// run advances, one timer at a time; after every step the checker (checker.ts) tests the
// invariants. Faults (faults.ts) pause, crash and cut processes and connections, black-hole
// them and step the server's clock. Replay one seed with `npm run sim -- --seed=<n> --verbose`.
import FakeTimers from '@sinonjs/fake-timers';
import { loadTelemetry } from '../../src/base/telemetry.ts';
import { useTokenSource } from '../../src/base/token.ts';
import { type Lease, Leasehold } from '../../src/index.ts';
import { LuaScripts } from '../../src/memory/lua.ts';
import { Checker } from './checker.ts';
import { scheduleFaults } from './faults.ts';
import { type Net, SimProcess, SimServer } from './network.ts';
import { Random } from './random.ts';
import { targets } from './targets.ts';
import { workload } from './workload.ts';

/** What one run is made of; every field has a default, and the seed varies the rest. */
export interface RunOptions {
  seed: number;
  /** Virtual ms during which the processes start waits (then they stop, and the run settles). */
  duration?: number;
  processes?: number;
  /** Faults on (the default) or off (a baseline: the invariants must hold without them too). */
  faults?: boolean;
  /** Only these kinds of fault (faults.ts FAULT_KINDS), more often. */
  only?: readonly string[];
  /** Print every event as it happens. */
  verbose?: boolean;
  /** The bound on a name left unused while a live waiter waits (docs/direct-grants.md). */
  strandBound?: number;
}

export interface RunResult {
  seed: number;
  violations: string[];
  /** The last events before the first violation (or the run's last), for the report. */
  log: string[];
  steps: number;
  leases: number;
  timeouts: number;
}

let lua: LuaScripts | undefined;

/** Loads what a run needs outside virtual time (the Lua VM, telemetry's one-time import). */
export async function prepare(): Promise<void> {
  lua ??= await LuaScripts.load();
  await loadTelemetry();
}

export const COMMAND_TIMEOUT = 1_000;

export async function run(options: RunOptions): Promise<RunResult> {
  if (lua === undefined) throw new Error('call prepare() first');
  const random = new Random(options.seed);
  const duration = options.duration ?? 20_000;
  const log: string[] = [];
  const clock = FakeTimers.install({
    now: SimServer.EPOCH,
    toFake: [
      'setTimeout',
      'clearTimeout',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'Date',
      'performance',
    ],
    loopLimit: 1_000_000,
  });
  const realRandom = Math.random;
  Math.random = () => random.float();
  useTokenSource((size) => random.bytes(size));
  const t0 = performance.now();
  const say = (text: string) => {
    const line = `${(performance.now() - t0).toFixed(1).padStart(9)} ${text}`;
    log.push(line);
    if (log.length > 400) log.shift();
    if (options.verbose) console.log(line);
  };
  const spike = () => random.chance(0.02);
  const processes: SimProcess[] = [];
  const instances: Leasehold[] = [];
  let checker: Checker | undefined;
  const net: Net = {
    random,
    lua,
    delay: () => (options.faults !== false && spike() ? random.int(20, 300) : 0.05 + random.float() * 1.5),
    duplicate: () => options.faults !== false && random.chance(0.05),
    sent: (calls) => checker?.sent(calls),
    ran: (calls, replies) => checker?.ran(calls, replies),
    log: say,
  };
  const server = new SimServer(net, COMMAND_TIMEOUT);
  const chosen = targets(random);
  checker = new Checker({
    server,
    processes,
    targets: chosen,
    say,
    strandBound: options.strandBound ?? 1_200,
  });
  try {
    const count = options.processes ?? random.int(2, 4);
    for (let i = 0; i < count; i++) {
      const process = new SimProcess(i);
      processes.push(process);
      server.connecting(process);
      const ttl = random.pick([600, 1_500, 4_000]);
      const connecting = Leasehold.connect({
        backend: server,
        prefix: 'sim',
        ttl,
        commandTimeout: COMMAND_TIMEOUT,
        retryDelay: 50,
        notifications: 'tracking',
        owner: process.owner,
      });
      let settled = false;
      void connecting.finally(() => {
        settled = true;
      });
      while (!settled) await clock.nextAsync();
      const lh = await connecting;
      instances.push(lh);
      say(`${process.owner} connected (ttl ${ttl})`);
    }
    checker.watchGrants();
    const end = performance.now() + duration;
    const loops = processes.map((process, i) =>
      workload({ process, lh: instances[i]!, targets: chosen, random, end, checker, say }),
    );
    if (options.faults !== false) scheduleFaults({ processes, server, random, end, say, only: options.only });
    let steps = 0;
    let done = false;
    const all = Promise.all(loops).then(() => {
      done = true;
    });
    // Until every process stopped starting waits and every wait settled, then a quiet stretch
    // with every fault healed, in which give-backs, withdraws and records must drain.
    const limit = end + 60_000;
    while (!done && performance.now() < limit) {
      if (clock.countTimers() === 0) {
        await Promise.resolve();
        if (!done) checker.fail('nothing left to run, yet waits are pending: a call that never settles');
        break;
      }
      await clock.nextAsync();
      steps += 1;
      checker.step();
      if (checker.violations.length > 0) break;
    }
    if (checker.violations.length === 0) {
      if (!done) checker.fail(`waits still pending ${limit - end} ms after the last one started`);
      for (const process of processes) process.resume();
      const quiet = performance.now() + 4 * COMMAND_TIMEOUT;
      while (performance.now() < quiet && checker.violations.length === 0) {
        await clock.nextAsync();
        steps += 1;
        checker.step();
      }
      if (checker.violations.length === 0) checker.finish(instances);
    }
    for (const lh of instances) void lh.close().catch(() => {});
    // Whatever is left (callers of a run cut short by a violation) runs out in virtual time.
    for (let i = 0; i < 10_000 && clock.countTimers() > 0; i++) await clock.nextAsync();
    void all;
    return {
      seed: options.seed,
      violations: checker.violations,
      log: [...log],
      steps,
      leases: checker.handedOut,
      timeouts: checker.timeouts,
    };
  } finally {
    clock.uninstall();
    Math.random = realRandom;
    useTokenSource(undefined);
  }
}

export type { Lease };
