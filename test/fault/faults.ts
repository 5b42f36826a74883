// The faults the matrix injects (test/fault/scenarios.ts lists the scenarios built from them):
// partitions, black holes, stopped servers, failovers, empty restarts, crashes, clock steps.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultContext, FaultWorker, ModeName, Scenario } from './types.ts';

/**
 * The fault matrix. Every scenario runs 3 contending worker processes, each behind its own proxy
 * to every lock server, for `rounds` repetitions of its fault. A scenario lists the modes it
 * applies to (all by default); the runner adds a row per mode that Leasehold.connect() supports.
 */
export interface MatrixScenario extends Scenario {
  modes?: readonly ModeName[];
}

export const FENCE = 'Pass `lease.fencingToken` with every write and have the resource reject lower tokens.';

/** Drops a worker's traffic for `ms`, then resets its connections (as TCP gives up on a dead peer). */
export async function partition(target: FaultWorker, ms: number, proxies = target.proxies): Promise<void> {
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
export async function blackHole(target: FaultWorker, ms: number): Promise<void> {
  for (const proxy of target.proxies) proxy.hold(true);
  await sleep(ms);
  for (const proxy of target.proxies) proxy.hold(false);
}

export async function stopServers(ctx: FaultContext, count: number, ms: number): Promise<void> {
  const servers = ctx.servers.slice(0, count);
  for (const server of servers) server.signal('SIGSTOP');
  ctx.note(`SIGSTOP ${servers.length} of ${ctx.servers.length} lock servers for ${ms} ms`);
  await sleep(ms);
  for (const server of servers) server.signal('SIGCONT');
}

export const failover = (durable: boolean): MatrixScenario => ({
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

export const restartEmpty = (reverify: boolean): MatrixScenario => ({
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
export const serverCrash = (reverify: boolean): MatrixScenario => ({
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
export const redisClock = (direction: 'forward' | 'back', nodes: 'all' | 'one'): MatrixScenario => ({
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
