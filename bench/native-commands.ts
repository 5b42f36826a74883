// Server-native conditional commands against leasehold's scripts (issue 23 item 2), per operation:
// Redis CPU, client CPU and wall time, 200,000 operations on 10,000 keys, pipelined in batches of
// 1,000 on one ioredis connection, two rounds. Each variant runs only where the server has it:
//   extension: extend.lua          | SET key value IFEQ value PX ttl + PTTL (Valkey >= 8.1, Redis >= 8.4;
//                                    the PTTL is the read that re-arms tracking after our own write)
//   release:   release.lua         | DELIFEQ key value (Valkey >= 9.0) | DELEX key IFEQ value (Redis >= 8.4)
// A release variant sets the key first (SET PX) so that it has something to delete; the "SET PX
// alone" row is that share, to subtract.
//   LEASEHOLD_REDIS_SERVER=.servers/redis-8.6/redis-server node --import tsx bench/native-commands.ts
import { Redis } from 'ioredis';
import { scriptSource } from '../src/scripts/index.ts';
import { Bench } from './lib/redis.ts';

const N = 200_000;
const BATCH = 1_000;
const KEYS = 10_000;
type Pipeline = ReturnType<Redis['pipeline']>;
type Add = (p: Pipeline, key: string) => void;

const bench = await Bench.start();
const r = new Redis(bench.url, { enableAutoPipelining: false });
try {
  console.log(`native commands against scripts on ${await bench.product()}, ioredis, ${N} operations`);
  const extendSha = String(await r.script('LOAD', scriptSource('extend')));
  const releaseSha = String(await r.script('LOAD', scriptSource('release')));
  /** Whether the server accepts `args` (a command or option it does not have is an error reply). */
  const has = async (args: string[]): Promise<boolean> =>
    r.call(args[0]!, ...args.slice(1)).then(
      () => true,
      () => false,
    );
  await r.set('probe', 'tok');
  const ifeq = await has(['SET', 'probe', 'tok', 'IFEQ', 'tok', 'PX', '60000']);
  const delifeq = await has(['DELIFEQ', 'probe', 'tok']);
  await r.set('probe', 'tok');
  const delex = await has(['DELEX', 'probe', 'IFEQ', 'tok']);
  console.log(`server has: SET IFEQ ${ifeq}, DELIFEQ ${delifeq}, DELEX IFEQ ${delex}`);
  const set: Add = (p, key) => p.set(key, 'tok', 'PX', 60_000);
  const variants: [string, Add, boolean][] = [
    ['extend.lua', (p, key) => p.evalsha(extendSha, 1, key, 'tok', 60_000), true],
    ['SET IFEQ + PTTL', (p, key) => p.call('SET', key, 'tok', 'IFEQ', 'tok', 'PX', '60000').pttl(key), ifeq],
    ['SET PX alone', set, true],
    [
      'SET + release.lua',
      (p, key) => {
        set(p, key);
        p.evalsha(releaseSha, 1, key, 'tok');
      },
      true,
    ],
    [
      'SET + DELIFEQ',
      (p, key) => {
        set(p, key);
        p.call('DELIFEQ', key, 'tok');
      },
      delifeq,
    ],
    [
      'SET + DELEX IFEQ',
      (p, key) => {
        set(p, key);
        p.call('DELEX', key, 'IFEQ', 'tok');
      },
      delex,
    ],
  ];
  for (let i = 0; i < KEYS; i++) await r.set(`k${i}`, 'tok', 'PX', 60_000);
  for (let round = 0; round < 2; round++)
    for (const [name, add, available] of variants) {
      if (!available) continue;
      const a = await bench.counters();
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < N; i += BATCH) {
        const p = r.pipeline();
        for (let j = 0; j < BATCH; j++) add(p, `k${(i + j) % KEYS}`);
        const replies = await p.exec();
        const failed = replies?.find(([error]) => error !== null);
        if (failed !== undefined) throw failed[0];
      }
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      const b = await bench.counters();
      const us = (x: number) => x.toFixed(2).padStart(6);
      console.log(
        `round ${round + 1}  ${name.padEnd(18)} Redis ${us(((b.cpu - a.cpu) * 1000) / N)} us, ` +
          `client ${us((used.user + used.system) / N)} us, wall ${us((wall * 1000) / N)} us per operation`,
      );
    }
} finally {
  r.disconnect();
  await bench.stop();
}
