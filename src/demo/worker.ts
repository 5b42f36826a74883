// One demo worker process: takes the shared lock over and over, doing "work" while it holds it,
// and reports every event to the parent as one JSON line on stdout.
import { Leasehold } from '../index.ts';

const [url, prefix, id] = process.argv.slice(2) as [string, string, string];
const say = (event: Record<string, unknown>) => {
  process.stdout.write(
    `${JSON.stringify({ id, at: performance.timeOrigin + performance.now(), ...event })}\n`,
  );
};

const lh = await Leasehold.connect({ url, prefix, ttl: 1_000 });
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
say({ type: 'ready', pid: process.pid });

for (;;) {
  const lease = await lh.acquire('report', { timeout: 30_000 });
  say({ type: 'acquired', fencingToken: String(lease.fencingToken) });
  // Reading the signal checks validity: a lease that lapsed before this line is aborted already,
  // and an 'abort' listener added now would never run.
  const { signal } = lease;
  const lost = new Promise<string>((resolve) => {
    const lostWith = () => resolve(String((signal.reason as Error).message));
    if (signal.aborted) lostWith();
    else signal.addEventListener('abort', lostWith, { once: true });
  });
  const work = new Promise<'done'>((resolve) => setTimeout(() => resolve('done'), 300));
  const outcome = await Promise.race([work, lost]);
  if (outcome === 'done') {
    say({ type: 'releasing' });
    await lease.release();
  } else {
    say({ type: 'lost', reason: outcome });
  }
  // Step aside briefly so that the lock is handed to another process, not taken back at once.
  await new Promise((resolve) => setTimeout(resolve, 60));
}
