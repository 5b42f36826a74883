import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Bench } from '../lib/redis.ts';
import { now, type Summary, summarize } from '../lib/stats.ts';
import type { Context } from './context.ts';

export interface FailoverResult {
  /** Per TTL (ms): how long after the leader's SIGKILL another process led, and ticks missed. */
  ttls: Record<string, { newLeader: Summary; beyondTtl: Summary; ticksMissed: Summary }>;
}

const LEADER = new URL('../workers/leader.ts', import.meta.url).pathname;

/** A leader process; resolves each time it prints that it leads. */
function replica(url: string, prefix: string, ttl: number, who: string) {
  const args = ['--import', 'tsx', LEADER, url, prefix, String(ttl), who];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const leading: ((at: number) => void)[] = [];
  let ready: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    ready = resolve;
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { ready?: string; leading?: string; at?: number };
    if (message.ready !== undefined) ready();
    // Timed here, on this process's clock, when the line arrives (a pipe: well under a millisecond).
    if (message.leading !== undefined) leading.shift()?.(now());
  });
  return {
    child,
    started,
    leads: () => new Promise<number>((resolve) => leading.push(resolve)),
  };
}

/**
 * leasehold only: how long an election stays without a leader after its leader's process is
 * SIGKILLed (a crashed host), for several TTLs: the docs' trade between `ttl` and ticks missed
 * (docs/election.md). Two replicas run `election.lead`; the leader is killed at a random moment
 * of its term; the time until the other leads is measured, and how far past the dead term's
 * expiry (read with PTTL at the kill) that was.
 */
export async function failover(ctx: Context): Promise<FailoverResult> {
  const cfg = ctx.config.failover;
  const bench = await Bench.start();
  const ttls: FailoverResult['ttls'] = {};
  try {
    for (const ttl of cfg.ttls) {
      const newLeader: number[] = [];
      const beyond: number[] = [];
      for (let i = 0; i < cfg.samples; i++) {
        const prefix = `bench-failover-${ttl}-${i}-${process.pid}`;
        const a = replica(bench.url, prefix, ttl, 'a');
        await a.started;
        await a.leads();
        const b = replica(bench.url, prefix, ttl, 'b');
        await b.started;
        const next = b.leads();
        await sleep(200 + Math.random() * ttl);
        const key = `${prefix}:{failover}:election`;
        a.child.kill('SIGKILL');
        const killedAt = now();
        const [expiry = Number.NaN] = await bench.expiries([key]);
        const at = await next;
        const pttl = expiry - killedAt;
        newLeader.push(at - killedAt);
        beyond.push(at - expiry);
        b.child.kill('SIGKILL');
        ctx.log(`  failover ttl ${ttl} ms: new leader after ${at - killedAt} ms (term had ${pttl} ms left)`);
      }
      const ticks = newLeader.map((ms) => Math.floor(ms / 1_000));
      ttls[String(ttl)] = {
        newLeader: summarize(newLeader),
        beyondTtl: summarize(beyond),
        ticksMissed: summarize(ticks),
      };
    }
  } finally {
    await bench.stop();
  }
  return { ttls };
}
