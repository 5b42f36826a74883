/** Sizes and durations of every scenario; `--quick` runs the same code with smaller numbers. */
export interface Config {
  mode: 'full' | 'quick';
  uncontended: {
    rounds: number;
    sequentialOps: number;
    warmupOps: number;
    inFlight: number;
    parallelMs: number;
    ttl: number;
  };
  handoff: {
    rounds: number;
    workers: number;
    durationMs: number;
    warmupMs: number;
    /** Each hold lasts hold..holdMax ms, drawn uniformly (holdMax absent: exactly hold). */
    hold: number;
    holdMax?: number;
    ttl: number;
  };
  /** The idle-waiter pattern: the handoff loop with long holds, so that waiters sleep. */
  idleHandoff: Config['handoff'];
  /** concurrent: all contenders of a round at once (quick runs only: they then share CPU and event loops). */
  loss: { rounds: number; samples: number; ttl: number; cap: number; concurrent: boolean };
  crash: { rounds: number; samples: number; ttl: number; concurrent: boolean };
  idle: { rounds: number; waiters: number; settleMs: number; windowMs: number; ttl: number };
  scale: {
    leases: number;
    leaseTtl: number;
    /** After acquiring, before the window: lets every contender's first extension happen. */
    warmupMs: number;
    windowMs: number;
    waiters: number;
    settleMs: number;
    waiterWindowMs: number;
  };
  floor: { pings: number; benchmarkRequests: number; inFlight: number; throughputMs: number };
}

export const full: Config = {
  mode: 'full',
  uncontended: {
    rounds: 5,
    sequentialOps: 1_000,
    warmupOps: 100,
    inFlight: 64,
    parallelMs: 1_500,
    ttl: 10_000,
  },
  handoff: { rounds: 3, workers: 4, durationMs: 4_000, warmupMs: 300, hold: 1, ttl: 10_000 },
  idleHandoff: {
    rounds: 3,
    workers: 4,
    durationMs: 8_000,
    warmupMs: 500,
    hold: 150,
    holdMax: 250,
    ttl: 10_000,
  },
  loss: { rounds: 2, samples: 100, ttl: 2_000, cap: 8_000, concurrent: false },
  crash: { rounds: 3, samples: 6, ttl: 2_000, concurrent: false },
  idle: { rounds: 2, waiters: 50, settleMs: 1_000, windowMs: 4_000, ttl: 10_000 },
  scale: {
    leases: 10_000,
    leaseTtl: 3_000,
    warmupMs: 3_000,
    windowMs: 6_000,
    waiters: 1_000,
    settleMs: 1_500,
    waiterWindowMs: 3_000,
  },
  floor: { pings: 5_000, benchmarkRequests: 100_000, inFlight: 64, throughputMs: 1_500 },
};

export const quick: Config = {
  mode: 'quick',
  uncontended: { rounds: 1, sequentialOps: 200, warmupOps: 20, inFlight: 64, parallelMs: 400, ttl: 10_000 },
  handoff: { rounds: 1, workers: 4, durationMs: 1_000, warmupMs: 150, hold: 1, ttl: 10_000 },
  idleHandoff: {
    rounds: 1,
    workers: 4,
    durationMs: 2_000,
    warmupMs: 300,
    hold: 150,
    holdMax: 250,
    ttl: 10_000,
  },
  loss: { rounds: 1, samples: 3, ttl: 2_000, cap: 8_000, concurrent: true },
  crash: { rounds: 1, samples: 2, ttl: 2_000, concurrent: true },
  idle: { rounds: 1, waiters: 50, settleMs: 400, windowMs: 1_000, ttl: 10_000 },
  scale: {
    leases: 1_000,
    leaseTtl: 2_000,
    warmupMs: 500,
    windowMs: 1_000,
    waiters: 100,
    settleMs: 300,
    waiterWindowMs: 700,
  },
  floor: { pings: 500, benchmarkRequests: 10_000, inFlight: 64, throughputMs: 400 },
};
