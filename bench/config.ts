import type { Shape } from './scenarios/cluster.ts';
import type { HeldSettings } from './scenarios/scale-held.ts';
import type { WaitersSettings } from './scenarios/scale-waiters.ts';

/** The handoff loop's settings. Each hold lasts hold..holdMax ms, drawn uniformly (holdMax absent: exactly hold). */
interface HandoffSettings {
  rounds: number;
  workers: number;
  durationMs: number;
  warmupMs: number;
  hold: number;
  holdMax?: number;
  ttl: number;
}

const held: HeldSettings = {
  leases: [1_000, 10_000, 100_000],
  ttl: 3_000,
  warmupMs: 3_000,
  windowMs: 5_000,
  concurrency: 64,
  acquireCapMs: 60_000,
  releaseCapMs: 20_000,
  limits: {},
};
const waiters: WaitersSettings = {
  waiters: [1, 10, 100, 1_000],
  processes: [1, 4, 16],
  handoffs: 30,
  handoffCapMs: 6_000,
  settleMs: 1_000,
  idleWindowMs: 2_000,
  afterMs: 10,
  holdMs: 10,
  ttl: 10_000,
  drainCapMs: 4_000,
};
const shapes: Shape[] = [
  { processes: 1, lanes: 1 },
  { processes: 1, lanes: 64 },
  { processes: 2, lanes: 64 },
];

/** The idle-waiter pattern: the handoff loop with long holds, so that waiters sleep. */
const idleHandoff: HandoffSettings = {
  rounds: 3,
  workers: 4,
  durationMs: 8_000,
  warmupMs: 500,
  hold: 150,
  holdMax: 250,
  ttl: 10_000,
};

/**
 * Sizes and durations of every scenario; `--quick` runs the same code with smaller numbers. loss
 * and crash `concurrent`: all contenders of a round at once (quick runs only: they then share CPU
 * and event loops). failover (leasehold only): samples per TTL. budget: rounds after a warm-up
 * round; per shape (pairs in flight), the pairs measured per side and round.
 */
export const full = {
  mode: 'full' as 'full' | 'quick',
  uncontended: {
    rounds: 5,
    sequentialOps: 1_000,
    warmupOps: 100,
    inFlight: 64,
    parallelMs: 1_500,
    ttl: 10_000,
  },
  handoff: {
    rounds: 3,
    workers: 4,
    durationMs: 4_000,
    warmupMs: 300,
    hold: 1,
    ttl: 10_000,
  } as HandoffSettings,
  idleHandoff,
  loss: { rounds: 2, samples: 100, ttl: 2_000, cap: 8_000, concurrent: false },
  crash: { rounds: 3, samples: 6, ttl: 2_000, concurrent: false },
  failover: { ttls: [1_000, 3_000, 10_000], samples: 5 },
  idle: { rounds: 2, waiters: 50, settleMs: 1_000, windowMs: 4_000, ttl: 10_000 },
  scale: { held, waiters },
  cluster: { masters: [0, 1, 3, 6], shapes, rounds: 2, warmupMs: 700, windowMs: 2_500, ttl: 10_000 },
  postgres: {
    handoffMs: 12_000,
    hold: 50,
    lossSamples: 200,
    waiters: 10,
    idleMs: 5_000,
    uncontendedMs: 3_000,
  },
  // Many short rounds: the machine's load moves within a second, and the sides of a round,
  // measured one right after the other, see the same load only if each window is short. One in
  // flight runs 2,000 pairs (a few tenths of a second): with 500, one round's ratio of the same
  // code against itself ranged 0.4-2.0. 64 in flight runs 5,000, about as long.
  budget: {
    rounds: 21,
    shapes: [
      { lanes: 1, pairs: 2_000 },
      { lanes: 64, pairs: 5_000 },
    ],
  },
};
export type Config = typeof full;

/** The same scenarios with small samples: a smoke run of the suite, not figures. */
export const quick: Config = {
  mode: 'quick',
  uncontended: { ...full.uncontended, rounds: 1, sequentialOps: 200, warmupOps: 20, parallelMs: 400 },
  handoff: { ...full.handoff, rounds: 1, durationMs: 1_000, warmupMs: 150 },
  idleHandoff: { ...idleHandoff, rounds: 1, durationMs: 2_000, warmupMs: 300 },
  loss: { ...full.loss, rounds: 1, samples: 3, concurrent: true },
  crash: { ...full.crash, rounds: 1, samples: 2, concurrent: true },
  failover: { ttls: [1_000], samples: 2 },
  idle: { ...full.idle, rounds: 1, settleMs: 400, windowMs: 1_000 },
  scale: {
    held: { ...held, leases: [1_000], warmupMs: 1_000, windowMs: 1_500 },
    waiters: {
      ...waiters,
      waiters: [1, 10],
      processes: [1, 4],
      handoffs: 5,
      settleMs: 300,
      idleWindowMs: 500,
    },
  },
  cluster: { ...full.cluster, masters: [0, 3], rounds: 1, warmupMs: 200, windowMs: 500 },
  postgres: { ...full.postgres, handoffMs: 1_500, lossSamples: 10, idleMs: 1_000, uncontendedMs: 500 },
  budget: {
    rounds: 5,
    shapes: [
      { lanes: 1, pairs: 150 },
      { lanes: 64, pairs: 1_500 },
    ],
  },
};
