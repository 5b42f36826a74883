// Server and client CPU per lease extension: extend.lua against `SET key value IFEQ value PX ttl`
// followed by the PTTL that re-arms tracking after our own write (Valkey >= 8.1 has IFEQ), 200,000
// extensions of 10,000 held keys, pipelined in batches of 1,000 on one ioredis connection.
//   LEASEHOLD_REDIS_SERVER=.servers/valkey-8.1/redis-server node --import tsx bench/extend-ifeq.ts
import { Redis } from 'ioredis';
import { scriptSource } from '../src/scripts/index.ts';
import { Bench } from './lib/redis.ts';

const N = 200_000;
const BATCH = 1_000;
const KEYS = 10_000;
const bench = await Bench.start();
const r = new Redis(bench.url, { enableAutoPipelining: false });
try {
  console.log(`extension cost on ${await bench.version()}`);
  const sha = String(await r.script('LOAD', scriptSource('extend')));
  for (let i = 0; i < KEYS; i++) await r.set(`k${i}`, 'tok', 'PX', 60_000);
  type Add = (p: ReturnType<Redis['pipeline']>, key: string) => void;
  const variants: [string, Add][] = [
    ['extend.lua', (p, key) => p.evalsha(sha, 1, key, 'tok', 60_000)],
    ['SET IFEQ + PTTL', (p, key) => p.call('SET', key, 'tok', 'IFEQ', 'tok', 'PX', '60000').pttl(key)],
  ];
  for (let round = 0; round < 2; round++)
    for (const [name, add] of variants) {
      const a = await bench.counters();
      const cpu = process.cpuUsage();
      for (let i = 0; i < N; i += BATCH) {
        const p = r.pipeline();
        for (let j = 0; j < BATCH; j++) add(p, `k${(i + j) % KEYS}`);
        await p.exec();
      }
      const used = process.cpuUsage(cpu);
      const b = await bench.counters();
      console.log(
        `${name.padEnd(16)} Redis ${(((b.cpu - a.cpu) * 1000) / N).toFixed(2)} us, client ${((used.user + used.system) / N).toFixed(2)} us per extension`,
      );
    }
} finally {
  r.disconnect();
  await bench.stop();
}
