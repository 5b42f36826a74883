import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Leasehold } from '/work/main/dist/index.js';

const url = process.env.URL;
const N = 20000;
async function run(label, pair) {
  for (let i = 0; i < 2000; i++) await pair(i);
  const t = [];
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    await pair(i);
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  console.log(
    label.padEnd(24),
    'p50',
    (t[N / 2] * 1000).toFixed(1),
    'us  p90',
    (t[Math.floor(N * 0.9)] * 1000).toFixed(1),
    'us',
  );
}
const raw = new Redis(url, { enableAutoPipelining: false });
const acq = await raw.script('LOAD', readFileSync('src/scripts/acquire.lua', 'utf8'));
const rel = await raw.script('LOAD', readFileSync('src/scripts/release.lua', 'utf8'));
for (let rep = 0; rep < 2; rep++) {
  await run('raw ioredis scripts', async (i) => {
    await raw.evalsha(acq, 2, 'raw:{x}', 'raw:{x}:f', 't' + i, 10000);
    await raw.evalsha(rel, 1, 'raw:{x}', 't' + i);
  });
  await run('raw ioredis setnx+rel', async (i) => {
    await raw.set('raw2', 't' + i, 'PX', 10000, 'NX');
    await raw.evalsha(rel, 1, 'raw2', 't' + i);
  });
  for (const driver of ['ioredis', 'node-redis']) {
    const lh = await Leasehold.connect({ url, driver });
    await run(`leasehold ${driver}`, async () => {
      const l = await lh.acquire('seq', { ttl: 10000 });
      await l.release();
    });
    await lh.close();
  }
}
raw.disconnect();
