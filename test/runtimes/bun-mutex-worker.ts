// One process of scripts/bun-check.sh: takes one lock `iterations` times and records each critical
// section in Redis through its own plain client, independent of leasehold and of any process's
// clock: an occupancy counter (INCR on entry must return 1) and the entry order with the fencing
// token. Clock-free on purpose: Bun's process.hrtime starts at its own process start.
import { createClient } from 'redis';
import { Leasehold } from '../../src/index.ts';

const [url, prefix, iterations, driver] = process.argv.slice(2) as [string, string, string, string];
const checker = createClient({ url });
await checker.connect();
const lh = await Leasehold.connect({
  url,
  prefix,
  ttl: 2_000,
  driver: driver as 'node-redis' | 'ioredis',
  retryDelay: 5,
});
const ENTER = `local occ = redis.call('INCR', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return occ`;
let overlaps = 0;
for (let i = 0; i < Number(iterations); i++) {
  const lease = await lh.acquire('shared', { timeout: 60_000 });
  const occupancy = await checker.eval(ENTER, {
    keys: [`${prefix}:check:occupancy`, `${prefix}:check:log`],
    arguments: [lease.fencingToken.toString()],
  });
  if (occupancy !== 1) overlaps += 1;
  await checker.decr(`${prefix}:check:occupancy`);
  await lease.release();
}
console.log(JSON.stringify({ overlaps, notifications: lh.notifications }));
await lh.close();
await checker.close();
