// A child process for the cross-process mutual exclusion test: it takes the lock `iterations`
// times and records every critical section in Redis through its own plain client, independent
// of leasehold: an occupancy counter (INCR on entry must return 1) and an ordered entry log.
import { createClient } from 'redis';
import { Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, name, iterations] = process.argv.slice(2) as [string, string, string, string];
const channel = parentChannel();
// A comma-separated list means quorum mode over those nodes; the checker uses the first one.
const nodes = url.includes(',') ? url.split(',') : undefined;
const checker = createClient({ url: nodes?.[0] ?? url });
await checker.connect();
const lh = await Leasehold.connect({
  ...(nodes === undefined ? { url } : { nodes }),
  prefix,
  ttl: 2_000,
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
  notifications: (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as 'tracking' | 'polling',
  retryDelay: 5,
});

const ENTER = `local occ = redis.call('INCR', KEYS[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
return occ`;

channel.onMessage(async (message) => {
  if (message['type'] !== 'go') return;
  let overlaps = 0;
  for (let i = 0; i < Number(iterations); i++) {
    const lease = await lh.acquire(name, { timeout: 60_000 });
    const occupancy = await checker.eval(ENTER, {
      keys: [`${prefix}:check:occupancy`, `${prefix}:check:log`],
      arguments: [`${lease.fencingToken} ${process.pid}`],
    });
    if (occupancy !== 1) overlaps += 1;
    await checker.decr(`${prefix}:check:occupancy`);
    await lease.release();
  }
  channel.send({ type: 'done', overlaps });
  await lh.close();
  await checker.close();
});
channel.send({ type: 'ready' });
