import { createConnection } from 'node:net';
import { createClient } from 'redis';
import { ioredisClient } from '../contenders/util.ts';
import { Bench, redisBenchmark } from '../lib/redis.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import type { Context } from './context.ts';

/** A lock-shaped script: compare-and-set with a read, about what an acquire attempt costs Redis. */
const script =
  "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return redis.call('DEL', KEYS[1]) end " +
  "return redis.call('PTTL', KEYS[1])";

export interface FloorResult {
  redisVersion: string;
  settings: Record<string, number>;
  ping: { raw: Summary; ioredis: Summary; nodeRedis: Summary };
  /** DEL sent → push → SET NX answered, bare sockets in one process. */
  bareHandoff: Summary;
  evalsha: { ioredis: number; nodeRedis: number; inFlight: number };
  redisBenchmark: { command: string; test: string; rps: number; p50: number; p99: number }[];
  script: string;
}

/** Sequential PINGs over a bare socket: the round trip with no client library in the way. */
async function rawPings(port: number, count: number): Promise<number[]> {
  const socket = createConnection({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const samples: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      await new Promise<void>((resolve) => {
        let seen = '';
        const onData = (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('\r\n')) {
            socket.off('data', onData);
            resolve();
          }
        };
        socket.on('data', onData);
        socket.write('PING\r\n');
      });
      samples.push(performance.now() - started);
    }
  } finally {
    socket.destroy();
  }
  return samples;
}

/** A bare RESP connection that collects what it reads until a predicate holds. */
async function bareSocket(port: number) {
  const socket = createConnection({ port, host: '127.0.0.1' });
  socket.setNoDelay(true);
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let seen = '';
  let waiting: { test: (s: string) => boolean; resolve: () => void } | undefined;
  socket.on('data', (chunk: Buffer) => {
    seen += chunk.toString('latin1');
    if (waiting?.test(seen)) {
      const w = waiting;
      waiting = undefined;
      seen = '';
      w.resolve();
    }
  });
  return {
    socket,
    /** Resolves (and forgets what was read) once the bytes read so far satisfy `test`. */
    until(test: (s: string) => boolean): Promise<void> {
      return new Promise((resolve) => {
        if (test(seen)) {
          seen = '';
          resolve();
        } else waiting = { test, resolve };
      });
    },
  };
}

/**
 * The handoff floor, with bare sockets in one process: a waiter tracking the lock key (RESP3,
 * CLIENT TRACKING ON, GET) hears the holder's DEL as an invalidation push and at once sends its
 * SET NX; the time from sending the DEL to the SET's reply is one push plus one round trip.
 */
export async function bareHandoffs(port: number, count: number): Promise<number[]> {
  const holder = await bareSocket(port);
  const waiter = await bareSocket(port);
  const samples: number[] = [];
  try {
    waiter.socket.write('HELLO 3\r\nCLIENT TRACKING ON\r\n');
    await waiter.until((s) => s.includes('+OK\r\n'));
    for (let i = 0; i < count + 20; i++) {
      holder.socket.write('SET floor:handoff holder\r\n');
      await holder.until((s) => s.includes('+OK\r\n'));
      waiter.socket.write('GET floor:handoff\r\n');
      await waiter.until((s) => s.includes('holder\r\n'));
      const pushed = waiter.until((s) => s.includes('invalidate'));
      const started = performance.now();
      holder.socket.write('DEL floor:handoff\r\n');
      await pushed;
      const acquired = waiter.until((s) => s.includes('+OK\r\n'));
      waiter.socket.write('SET floor:handoff waiter NX PX 10000\r\n');
      await acquired;
      if (i >= 20) samples.push(performance.now() - started);
      await holder.until((s) => s.includes(':1\r\n'));
      holder.socket.write('DEL floor:handoff\r\n');
      await holder.until((s) => s.includes(':1\r\n'));
    }
  } finally {
    holder.socket.destroy();
    waiter.socket.destroy();
  }
  return samples;
}

async function timed(count: number, op: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 50; i++) await op();
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await op();
    samples.push(performance.now() - started);
  }
  return samples;
}

async function throughput(
  inFlight: number,
  ms: number,
  op: (lane: number) => Promise<unknown>,
): Promise<number> {
  let done = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, lane) => {
      while (performance.now() < deadline) {
        await op(lane);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** Scenario 7: what the server and the clients can do at best, on the same kind of server. */
export async function floor(ctx: Context): Promise<FloorResult> {
  const cfg = ctx.config.floor;
  const bench = await Bench.start();
  const io = await ioredisClient(bench.url);
  const nr = createClient({ url: bench.url });
  nr.on('error', () => {});
  await nr.connect();
  try {
    const raw = summarize(await rawPings(bench.port, cfg.pings));
    const ioredisPing = summarize(await timed(cfg.pings, () => io.ping()));
    const nodeRedisPing = summarize(await timed(cfg.pings, () => nr.ping()));
    const bareHandoff = summarize(await bareHandoffs(bench.port, Math.min(cfg.pings, 2_000)));
    ctx.log(
      `  floor: handoff with bare sockets (DEL → push → SET NX reply) p50 ${bareHandoff.p50.toFixed(3)} ms, ` +
        `p99 ${bareHandoff.p99.toFixed(3)} ms`,
    );
    ctx.log(
      `  floor: PING round trip p50 raw ${raw.p50.toFixed(3)} ms, ioredis ${ioredisPing.p50.toFixed(3)} ms, ` +
        `node-redis ${nodeRedisPing.p50.toFixed(3)} ms`,
    );
    const sha = (await io.script('LOAD', script)) as string;
    const ioredisEval = await throughput(cfg.inFlight, cfg.throughputMs, (lane) =>
      io.evalsha(sha, 1, `floor:io:${lane}`, 'v'),
    );
    const nodeRedisEval = await throughput(cfg.inFlight, cfg.throughputMs, (lane) =>
      nr.sendCommand(['EVALSHA', sha, '1', `floor:nr:${lane}`, 'v']),
    );
    ctx.log(
      `  floor: EVALSHA at ${cfg.inFlight} in flight: ioredis ${ioredisEval.toFixed(0)}/s, ` +
        `node-redis ${nodeRedisEval.toFixed(0)}/s`,
    );
    const n = String(cfg.benchmarkRequests);
    const runs: { command: string; args: string[] }[] = [
      { command: `redis-benchmark --csv -n ${n} -t ping,set`, args: ['-n', n, '-t', 'ping,set'] },
      {
        command: `redis-benchmark --csv -n ${n} -t ping,set -P 16`,
        args: ['-n', n, '-t', 'ping,set', '-P', '16'],
      },
      {
        command: `redis-benchmark --csv -n ${n} -r 100000 evalsha <lock-shaped script> 1 key:__rand_int__ v`,
        args: ['-n', n, '-r', '100000', 'evalsha', sha, '1', 'key:__rand_int__', 'v'],
      },
      {
        command: `redis-benchmark --csv -n ${n} -r 100000 -P 16 evalsha <lock-shaped script> 1 key:__rand_int__ v`,
        args: ['-n', n, '-r', '100000', '-P', '16', 'evalsha', sha, '1', 'key:__rand_int__', 'v'],
      },
    ];
    const redisBenchmarkRows: FloorResult['redisBenchmark'] = [];
    for (const run of runs) {
      for (const row of await redisBenchmark(bench.port, run.args)) {
        const test = row.test.startsWith('EVALSHA') || row.test.startsWith('evalsha') ? 'EVALSHA' : row.test;
        redisBenchmarkRows.push({ command: run.command, ...row, test });
        ctx.log(
          `  floor: ${run.command.replace(' --csv', '')}: ${test} ${row.rps.toFixed(0)}/s p50 ${row.p50} ms`,
        );
      }
    }
    return {
      redisVersion: await bench.version(),
      settings: { ...cfg },
      ping: { raw, ioredis: ioredisPing, nodeRedis: nodeRedisPing },
      bareHandoff,
      evalsha: { ioredis: ioredisEval, nodeRedis: nodeRedisEval, inFlight: cfg.inFlight },
      redisBenchmark: redisBenchmarkRows,
      script,
    };
  } finally {
    io.disconnect();
    await nr.close().catch(() => {});
    await bench.stop();
  }
}
