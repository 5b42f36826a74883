// A process that holds and contends for locks on command, for the dashboard's browser test:
// each worker is one program with its own owner, as a person's services would be.
import { type Lease, Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, owner] = process.argv.slice(2) as [string, string, string];
const channel = parentChannel();
const lh = await Leasehold.connect({
  url,
  prefix,
  owner,
  ttl: 30_000,
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
});
const held: Lease[] = [];

channel.onMessage(async (message) => {
  const name = String(message['name']);
  const hold = (lease: Lease) => {
    held.push(lease);
    channel.send({ type: 'holding', name, fencingToken: String(lease.fencingToken) });
  };
  switch (message['type']) {
    case 'mutex':
      hold(await lh.acquire(name));
      break;
    case 'force':
      hold(await lh.forceAcquire(name));
      break;
    case 'fair':
      // Queues behind the holder; reports once it has its turn.
      channel.send({ type: 'queued', name });
      hold(await lh.fairLock(name).acquire());
      break;
    case 'semaphore':
      hold(
        await lh
          .semaphore(name, { limit: Number(message['limit']) })
          .acquire({ permits: Number(message['permits']) }),
      );
      break;
    case 'read':
      hold(await lh.readWriteLock(name).read());
      break;
    case 'campaign':
      hold(await lh.election(name).campaign(owner));
      break;
  }
});
channel.send({ type: 'ready' });
