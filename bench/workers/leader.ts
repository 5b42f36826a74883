// One replica leading an election for the failover scenario (bench/scenarios/failover.ts): it
// runs `election.lead` with the given TTL and prints a JSON line, with the time, each time it
// becomes leader. Killed with SIGKILL by the scenario, as a crashed host would be.
import { Leasehold } from '../../src/index.ts';

const [url, prefix, ttl, who] = process.argv.slice(2) as [string, string, string, string];
const lh = await Leasehold.connect({ url, prefix, ttl: Number(ttl) });
process.stdout.write(`${JSON.stringify({ ready: who })}\n`);
await lh.election('failover').lead(who, async (term) => {
  process.stdout.write(`${JSON.stringify({ leading: who })}\n`);
  await new Promise((resolve) => term.signal.addEventListener('abort', resolve, { once: true }));
});
