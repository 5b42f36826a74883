// A replica that starts a charge under lh.idempotent and never finishes it (test/integration/
// idempotent-crash.test.ts): it says when the charge began, then the test SIGKILLs it mid-run.
import { Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, ttl, key] = process.argv.slice(2) as [string, string, string, string];
const channel = parentChannel();
const lh = await Leasehold.connect({
  url,
  prefix,
  owner: 'replica-1',
  ttl: Number(ttl),
  driver: (process.env['LEASEHOLD_TEST_DRIVER'] ?? 'node-redis') as 'node-redis' | 'ioredis',
  notifications: (process.env['LEASEHOLD_TEST_NOTIFICATIONS'] ?? 'tracking') as 'tracking' | 'polling',
});
channel.onMessage(async (message) => {
  if (message['type'] !== 'charge') return;
  await lh.idempotent(key, async (lease) => {
    channel.send({ type: 'charging', fencingToken: String(lease.fencingToken) });
    // The provider call that the SIGKILL interrupts.
    await new Promise(() => {});
  });
});
channel.send({ type: 'ready' });
