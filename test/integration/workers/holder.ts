// A child process that takes one lock and holds it until it is killed.
import { Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, name, ttl] = process.argv.slice(2) as [string, string, string, string];
const channel = parentChannel();
const lh = await Leasehold.connect({
  url,
  prefix,
  ttl: Number(ttl),
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
  notifications: (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as 'tracking' | 'polling',
});
const lease = await lh.acquire(name);
channel.send({ type: 'holding', fencingToken: String(lease.fencingToken) });
