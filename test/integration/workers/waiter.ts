// A process that waits for one name on command and reports when it holds it (test/integration/
// grant-strands.test.ts): the waiter a test pauses with SIGSTOP while a release grants it the name.
import { type Lease, Leasehold } from '../../../src/index.ts';
import { type Kind, take } from '../../harness/strands.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, ttl, owner] = process.argv.slice(2) as [string, string, string, string];
const channel = parentChannel();
const lh = await Leasehold.connect({
  url,
  prefix,
  owner,
  ttl: Number(ttl),
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
  notifications: (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as 'tracking' | 'polling',
});
let held: Lease | undefined;
channel.onMessage(async (message) => {
  if (message['type'] === 'wait') {
    held = await take(lh, message['kind'] as Kind, String(message['name']), 60_000);
    channel.send({ type: 'holds', fencingToken: String(held.fencingToken) });
  } else if (message['type'] === 'release') {
    await held?.release();
    channel.send({ type: 'released' });
  }
});
channel.send({ type: 'ready' });
