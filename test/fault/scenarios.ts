import { setTimeout as sleep } from 'node:timers/promises';
import {
  blackHole,
  FENCE,
  failover,
  type MatrixScenario,
  partition,
  redisClock,
  restartEmpty,
  serverCrash,
  stopServers,
} from './faults.ts';
import { WAITER_SCENARIOS } from './waiter-scenarios.ts';

export type { MatrixScenario } from './faults.ts';

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
