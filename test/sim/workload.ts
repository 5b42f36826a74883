// What the simulated processes do (test/sim/): each runs a few concurrent callers that wait for
// random names with random timeouts and aborts, hold what they get for a while and release it,
// the way a service's request handlers and jobs do. Every wait and lease is reported to the
// checker, which judges them.
import {
  ConnectionClosedError,
  type Lease,
  type Leasehold,
  LockTimeoutError,
  QuorumError,
} from '../../src/index.ts';
import type { Checker, Wait } from './checker.ts';
import type { SimProcess } from './network.ts';
import type { Random } from './random.ts';
import { acquire, ask, type Target } from './targets.ts';

export interface WorkloadInit {
  process: SimProcess;
  lh: Leasehold;
  targets: readonly Target[];
  random: Random;
  /** Virtual time after which no new wait starts. */
  end: number;
  checker: Checker;
  say(text: string): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A process's callers; resolves once each has stopped (its last wait settled, its lease released). */
export function workload(init: WorkloadInit): Promise<void> {
  const callers = init.random.int(1, 3);
  const loops: Promise<void>[] = [];
  for (let c = 0; c < callers; c++) loops.push(caller(init, `${init.process.owner}.${c}`));
  return Promise.all(loops).then(() => {});
}

async function caller(init: WorkloadInit, who: string): Promise<void> {
  const { process, lh, targets, random, end, checker, say } = init;
  while (performance.now() < end && !process.crashed) {
    await sleep(random.chance(0.3) ? 0 : random.int(0, 1_200));
    if (performance.now() >= end || process.crashed) return;
    const wants = ask(random.pick(targets), random);
    const { name } = wants.target;
    const timeout = random.pick([0, random.int(20, 400), random.int(400, 3_000), 8_000]);
    const abort = random.chance(0.15) ? new AbortController() : undefined;
    if (abort !== undefined) {
      const at = random.int(0, Math.max(1, timeout === 0 ? 50 : timeout));
      setTimeout(() => abort.abort(new Error('caller gave up')), at);
    }
    const ttl = random.chance(0.3) ? random.pick([300, 900, 2_500]) : undefined;
    const wait: Wait = checker.waitStarted(process, who, wants);
    let lease: Lease;
    try {
      lease = await acquire(lh, wants, {
        timeout,
        ...(abort === undefined ? {} : { signal: abort.signal }),
        ...(ttl === undefined ? {} : { ttl }),
        owner: who,
      });
    } catch (error) {
      checker.waitEnded(wait, undefined, error);
      if (!expected(error, abort)) checker.fail(`${who} ${name}: the wait ended with ${String(error)}`);
      continue;
    }
    checker.waitEnded(wait, lease, undefined);
    say(`${who} ${name} ${wants.role}: holds #${lease.fencingToken}`);
    await sleep(random.chance(0.2) ? 0 : random.int(0, 700));
    if (process.crashed) return;
    checker.releasing(lease);
    const released = await lease.release().catch((error: unknown) => error);
    say(`${who} ${name}: released #${lease.fencingToken} (${String(released)})`);
  }
}

/** The ways a wait may end without a lease, for a caller that waits as this one does. */
function expected(error: unknown, abort: AbortController | undefined): boolean {
  if (error instanceof LockTimeoutError || error instanceof ConnectionClosedError) return true;
  if (error instanceof QuorumError) return false;
  return abort !== undefined && error === abort.signal.reason;
}
