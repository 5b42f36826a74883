import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { Leasehold } from '/work/main/dist/index.js';

const pid = Number(process.env.PID);
const tick = () => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};
const self = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const url = process.env.URL,
  ms = 4000;
async function run(label, pair) {
  const lane = async (i, until) => {
    let n = 0;
    while (performance.now() < until) {
      await pair(i);
      n++;
    }
    return n;
  };
  await Promise.all(Array.from({ length: 64 }, (_, i) => lane(i, performance.now() + 500)));
  const s0 = tick(),
    c0 = self(),
    t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: 64 }, (_, i) => lane(i, t0 + ms)));
  const n = counts.reduce((a, b) => a + b, 0),
    secs = (performance.now() - t0) / 1000;
  console.log(
    label.padEnd(22),
    String(Math.round(n / secs)).padStart(6),
    'pairs/s  server',
    ((tick() - s0) / n).toFixed(2),
    'us/pair  client',
    ((self() - c0) / n).toFixed(2),
    'us/pair',
  );
}
for (const driver of ['node-redis', 'ioredis']) {
  const lh = await Leasehold.connect({ url, driver });
  await run(`leasehold ${driver}`, async (i) => {
    const l = await lh.acquire(`u:${i}`, { ttl: 10000 });
    await l.release();
  });
  await lh.close();
}
const client = new Redis(url);
await run('redis-semaphore', async (i) => {
  const m = new Mutex(client, `s:${i}`, { lockTimeout: 10000 });
  await m.acquire();
  await m.release();
});
client.disconnect();
