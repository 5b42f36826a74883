import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultContext, FaultWorker, ModeName, Scenario } from './types.ts';
import { WAITER_SCENARIOS } from './waiter-scenarios.ts';

/**
 * The fault matrix. Every scenario runs 3 contending worker processes, each behind its own proxy
 * to every lock server, for `rounds` repetitions of its fault. A scenario lists the modes it
 * applies to (all by default); the runner adds a row per mode that Leasehold.connect() supports.
 */
export interface MatrixScenario extends Scenario {
  modes?: readonly ModeName[];
}

const FENCE = 'Pass `lease.fencingToken` with every write and have the resource reject lower tokens.';

/** Drops a worker's traffic for `ms`, then resets its connections (as TCP gives up on a dead peer). */
async function partition(target: FaultWorker, ms: number, proxies = target.proxies): Promise<void> {
  for (const proxy of proxies) proxy.blackhole(true);
  await sleep(ms);
  // Dropped bytes would desynchronise the RESP stream: a real partition ends with new connections.
  for (const proxy of proxies) {
    proxy.resetAll();
    proxy.blackhole(false);
  }
}

/**
 * Holds a worker's traffic for `ms` (connections stay open, nothing passes), then lets it through
 * in order, as TCP does once a path that dropped packets works again.
 */
async function blackHole(target: FaultWorker, ms: number): Promise<void> {
  for (const proxy of target.proxies) proxy.hold(true);
  await sleep(ms);
  for (const proxy of target.proxies) proxy.hold(false);
}

async function stopServers(ctx: FaultContext, count: number, ms: number): Promise<void> {
  const servers = ctx.servers.slice(0, count);
  for (const server of servers) server.signal('SIGSTOP');
  ctx.note(`SIGSTOP ${servers.length} of ${ctx.servers.length} lock servers for ${ms} ms`);
  await sleep(ms);
  for (const server of servers) server.signal('SIGCONT');
}

const failover = (durable: boolean): MatrixScenario => ({
  id: durable ? 'failover-wait' : 'failover',
  title: durable
    ? "cluster: the lock's master SIGKILLed, replica promoted; acquisitions WAIT for 1 replica"
    : "cluster: the lock's master SIGKILLed while a lease is held, its replica promoted",
  modes: ['cluster'],
  ...(durable
    ? { connectExtra: () => ({ durability: { replicas: 1, timeout: 200 } }) }
    : {
        mayOverlap:
          'replication is asynchronous: the promoted replica may not have the lock key (or its ' +
          'extension), so a second holder can acquire while the first still holds',
      }),
  mayRegress: 'the fencing counter on the promoted replica can lag behind the dead master',
  advice: durable
    ? `\`durability: { replicas: 1 }\` makes the acquisition itself survive a failover. ${FENCE}`
    : `Set \`durability: { replicas: 1 }\` or accept that a failover can hand the lock out twice. ${FENCE}`,
  fault: async (ctx, rounds) => {
    for (let r = 0; r < Math.min(rounds, 1); r++) {
      await ctx.holder();
      await ctx.failover?.();
      ctx.note('failed over the master of the lock key');
      await sleep(ctx.ttl * 2);
    }
  },
});

const restartEmpty = (reverify: boolean): MatrixScenario => ({
  id: reverify ? 'restart-empty-reverify' : 'restart-empty',
  title: reverify
    ? "Redis restarted empty, holders on `onDisconnect: 'reverify'`"
    : 'Redis killed and restarted empty while a lease is held',
  modes: ['single', 'quorum'],
  ...(reverify
    ? {
        connectExtra: () => ({ onDisconnect: 'reverify' }),
        mayOverlap:
          "with onDisconnect: 'reverify' a holder trusts its lease across the disconnect until it " +
          're-verifies; a waiter that reconnects first acquires the (now free) lock in between',
        chosenBy:
          "`onDisconnect: 'reverify'`, which keeps leases across a disconnect; the default 'abort' " +
          'ends them at the disconnect and has no overlap here (restart-empty)',
      }
    : {}),
  advice: reverify
    ? `'reverify' trades this window for surviving blips: fence your writes. ${FENCE}`
    : 'Abort work on `lease.signal` (a lost connection aborts it). Fencing tokens are floored by the ' +
      "server's clock, so they keep rising across a restart unless that clock goes back.",
  fault: async (ctx, rounds) => {
    for (let r = 0; r < rounds; r++) {
      await ctx.holder();
      await Promise.all(ctx.servers.map((server) => server.restart()));
      ctx.note('lock servers restarted empty');
      await sleep(ctx.ttl * 3);
    }
  },
});

/**
 * PostgreSQL killed (the postmaster and every backend, as a machine crash would) and started again
 * while a lease is held: it recovers its WAL, but leasehold commits without waiting for the flush,
 * so the last commits may be gone. Leasehold learns of the restart from pg_postmaster_start_time()
 * when its listener reconnects and treats every lease on the server as lost.
 */
const serverCrash = (reverify: boolean): MatrixScenario => ({
  id: reverify ? 'server-crash-reverify' : 'server-crash',
  title: reverify
    ? "PostgreSQL crashed and restarted, holders on `onDisconnect: 'reverify'`"
    : 'PostgreSQL crashed (SIGKILL of every process) and restarted while a lease is held',
  modes: ['postgres'],
  ...(reverify ? { connectExtra: () => ({ onDisconnect: 'reverify' }) } : {}),
  advice:
    'Abort work on `lease.signal`: a restart of the server loses every lease on it (its last ' +
    "commits may be gone). Fencing tokens are floored by the server's clock, so they keep rising.",
  fault: async (ctx, rounds) => {
    for (let r = 0; r < rounds; r++) {
      await ctx.holder();
      await Promise.all(ctx.servers.map((server) => server.restart()));
      ctx.note('PostgreSQL crashed and restarted (WAL recovery)');
      await sleep(ctx.ttl * 3);
    }
  },
});

/**
 * Steps the lock servers' wall clock (what Redis expires keys by) while a lease is held: forward
 * by a minute a round (an NTP step, a VM resumed), or back by a minute a round and never corrected.
 * The monotonic clock is left alone: no real one goes back.
 */
const redisClock = (direction: 'forward' | 'back', nodes: 'all' | 'one'): MatrixScenario => ({
  id: `redis-clock-${direction}${nodes === 'one' ? '-one' : ''}`,
  title:
    nodes === 'one'
      ? "quorum: 1 of 3 nodes' wall clock steps forward 1 min a round while a lease is held"
      : `every lock server's wall clock steps ${direction} 1 min a round while a lease is held`,
  serverClock: true,
  ...(nodes === 'one' ? { modes: ['quorum'] as const } : {}),
  ...(direction === 'forward' && nodes === 'all'
    ? {
        mayOverlap:
          "a forward step expires the key on Redis at once, while the holder's validity still runs on its " +
          'own monotonic clock; the holder hears of it at its next extension or when the expiry is pushed',
      }
    : {}),
  advice:
    direction === 'back'
      ? 'Nothing for safety: keys outlive their TTL by the step, so a crashed holder costs waiters more. ' +
        'Fencing tokens keep rising while the counter lives.'
      : nodes === 'one'
        ? 'Nothing beyond the usual: the other two nodes keep the majority.'
        : `Keep Redis's wall clock from stepping (slew it: chrony \`makestep\` off, ntpd -x). ${FENCE}`,
  fault: async (ctx, rounds) => {
    for (let r = 1; r <= rounds; r++) {
      await ctx.holder();
      const offset = (direction === 'forward' ? 60_000 : -60_000) * r;
      await ctx.setServerClock?.(offset, nodes === 'one' ? ctx.servers.slice(0, 1) : ctx.servers);
      await sleep(ctx.ttl);
    }
  },
});

export const SCENARIOS: readonly MatrixScenario[] = [
  {
    id: 'baseline',
    title: 'no fault (control)',
    advice: 'Nothing: under no fault the lease alone gives mutual exclusion.',
    fault: async (ctx, rounds) => {
      await sleep(ctx.ttl * 4 * rounds);
    },
  },
  {
    id: 'partition',
    needsProxy: true,
    title: 'holder partitioned from Redis for 2 x TTL',
    advice: `Stop work when \`lease.signal\` aborts (it does on time). ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await partition(await ctx.holder(), ctx.ttl * 2);
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'latency',
    needsProxy: true,
    title: 'latency spikes of 0.3-0.6 x TTL each way on the holder, then on everyone',
    advice: `Keep the TTL well above the worst round trip; a late reply aborts the lease. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        for (const share of [0.3, 0.45, 0.6]) {
          const target = await ctx.holder();
          for (const proxy of target.proxies) proxy.setLatency(ctx.ttl * share);
          await sleep(ctx.ttl * 1.5);
          for (const proxy of target.proxies) proxy.setLatency(0);
          await sleep(ctx.ttl);
        }
        for (const w of ctx.workers) for (const proxy of w.proxies) proxy.setLatency(ctx.ttl * 0.55);
        await sleep(ctx.ttl * 2);
        for (const w of ctx.workers) for (const proxy of w.proxies) proxy.setLatency(0);
        await sleep(ctx.ttl);
      }
    },
  },
  {
    id: 'redis-sigstop',
    title: 'every lock server SIGSTOPped for 2 x TTL',
    advice: `Stop work when \`lease.signal\` aborts. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await ctx.holder();
        await stopServers(ctx, ctx.servers.length, ctx.ttl * 2);
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'holder-sigstop',
    title: 'holder process SIGSTOPped for 2 x TTL (a GC pause)',
    advice:
      'A paused process cannot be told anything: the lease lapses while it sleeps and its next ' +
      `check of \`lease.signal\` sees the abort, but a write already on its way is stale. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        // Once between a check of the signal and the write it guards, once anywhere.
        for (const pick of [() => ctx.nextCheck(), () => ctx.holder()]) {
          const target = await pick();
          ctx.pause(target);
          await sleep(ctx.ttl * 2);
          ctx.resume(target);
          await sleep(ctx.ttl * 2);
        }
      }
    },
  },
  restartEmpty(false),
  restartEmpty(true),
  serverCrash(false),
  serverCrash(true),
  {
    id: 'loop-stall',
    title: "holder's event loop blocked by a busy wait for 2 x TTL (its timers fire late)",
    advice:
      'A blocked event loop runs no timer, renewal or socket read: the lease lapses during the stall and ' +
      '`lease.signal` reads aborted after it, but a write the holder had already decided to make goes ' +
      `out stale. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        // Once between a check of the signal and the write it guards, once anywhere.
        for (const pick of [() => ctx.nextCheck(), () => ctx.holder()]) {
          await ctx.stall(await pick(), ctx.ttl * 2);
          await sleep(ctx.ttl * 2);
        }
      }
    },
  },
  redisClock('forward', 'all'),
  redisClock('forward', 'one'),
  redisClock('back', 'all'),
  {
    id: 'clock-skew',
    needsProxy: true,
    title: 'client clocks skewed (x2 rate +1 h; -1 h offset), holder partitioned',
    skew: (i) =>
      i === 0 ? { rate: 2, offset: 3_600_000 } : i === 1 ? { rate: 1, offset: -3_600_000 } : undefined,
    advice:
      'Nothing for offsets or a fast clock: validity is measured on the monotonic clock from the ' +
      'send time, and server-side expiry uses Redis time.',
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await partition(await ctx.holder(), ctx.ttl * 2);
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'clock-slow',
    needsProxy: true,
    title: 'one client clock at half speed, partitioned while it holds',
    skew: (i) => (i === 0 ? { rate: 0.5, offset: 0 } : undefined),
    mayOverlap:
      'a clock that runs slower than the drift allowance (1% of the TTL + 2 ms) overestimates validity',
    advice:
      'No lease survives a clock that runs slow by more than the drift allowance (1% + 2 ms): the ' +
      `holder believes in its lease after Redis has expired it. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        let target = await ctx.holder();
        while (target.id !== 'w0') {
          await sleep(ctx.ttl / 4);
          target = await ctx.holder();
        }
        await partition(target, ctx.ttl * 3);
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'quorum-minority',
    needsProxy: true,
    title: 'quorum: 1 of 3 nodes SIGSTOPped for 3 x TTL, then the holder cut off one node',
    modes: ['quorum'],
    advice: 'Nothing beyond the usual: a majority keeps serving.',
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await ctx.holder();
        await stopServers(ctx, 1, ctx.ttl * 3);
        const target = await ctx.holder();
        await partition(target, ctx.ttl * 3, target.proxies.slice(0, 1));
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'quorum-majority',
    title: 'quorum: 2 of 3 nodes SIGSTOPped for 2 x TTL',
    modes: ['quorum'],
    advice: `Holders must abort on \`lease.signal\`; nobody can acquire until a majority is back. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await ctx.holder();
        await stopServers(ctx, 2, ctx.ttl * 2);
        await sleep(ctx.ttl * 2);
      }
    },
  },
  failover(false),
  failover(true),
  {
    id: 'redis-stall-long',
    title: 'every lock server stalled (SIGSTOP) for 3 x TTL, longer than any lease; commandTimeout TTL / 2',
    commandTimeout: (ttl) => ttl / 2,
    // Waiters' acquisitions buffered by the stalled server run when it wakes: their keys would
    // block the name for a TTL after the heal unless their give-backs are queued (a quorum's were
    // not: 1,005-1,011 ms after each heal, where single Redis took about 10 ms).
    freeAfterHeal: (ttl) => ttl / 2,
    advice:
      'Nothing for safety: leases lapse on time, and every pending call fails with ' +
      '`RedisUnavailableError` within `commandTimeout` instead of hanging for the stall. ' +
      `Set \`commandTimeout\` above the longest stall you want to ride out. ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await ctx.holder();
        await stopServers(ctx, ctx.servers.length, ctx.ttl * 3);
        ctx.healed();
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'blackhole-long',
    needsProxy: true,
    title:
      "holder's network drops every packet for 3 x TTL (connections stay open), then heals; commandTimeout TTL / 2",
    commandTimeout: (ttl) => ttl / 2,
    advice:
      'Nothing for safety: the holder gives the connection up after `commandTimeout`, its lease ' +
      `lapses on time, and its calls fail instead of waiting for TCP to give up (~15 min). ${FENCE}`,
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        await blackHole(await ctx.holder(), ctx.ttl * 3);
        ctx.healed();
        await sleep(ctx.ttl * 2);
      }
    },
  },
  {
    id: 'blackhole-heal',
    needsProxy: true,
    title:
      "holder's network drops every packet as it finishes (release sent into the hole) for 2 x commandTimeout, then heals",
    commandTimeout: (ttl) => ttl / 8,
    // The key would otherwise live on for the rest of its TTL (at least 2/3 of it here).
    freeAfterHeal: (ttl) => ttl / 8,
    advice:
      'Nothing: the release that could not be confirmed is queued and sent again once the network ' +
      'works, so the name is free within moments of the heal rather than at the end of its TTL.',
    fault: async (ctx, rounds) => {
      for (let r = 0; r < rounds; r++) {
        // Before its last write: its release follows within TTL / 3, into the hole.
        await blackHole(await ctx.nextCheck(true), ctx.ttl / 2);
        ctx.healed();
        await sleep(ctx.ttl * 3);
      }
    },
  },
  ...WAITER_SCENARIOS,
];

/**
 * The scenarios the full run repeats, in single mode, for each primitive other than the mutex
 * (FaultPrimitive): the faults that exercise a direct grant's way to a waiter and the give-backs of
 * unanswered calls: a holder cut off or paused (its waiters granted after its TTL), Redis stalled
 * (replies late) or restarted empty, a black hole that heals (the name freed at once).
 */
export const PRIMITIVE_SCENARIOS: readonly string[] = [
  'partition',
  'waiter-sigstop',
  'waiter-partition',
  'holder-sigstop',
  'redis-sigstop',
  'restart-empty',
  'blackhole-heal',
];

export const scenario = (id: string): MatrixScenario => {
  const found = SCENARIOS.find((s) => s.id === id);
  if (found === undefined) throw new Error(`no scenario ${id}`);
  return found;
};
