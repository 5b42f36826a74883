// A replica running node-cron (the real package) with leasehold's run coordinator, for
// test/integration/frameworks.test.ts: a 1 ms job every second, its clock `offset` ms off (as
// replicas' clocks are), reporting each fire it ran.
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, offsetText, seconds] = process.argv.slice(2) as [string, string, string, string];
const offset = Number(offsetText);
// This replica's clock: Date (which node-cron schedules by) runs `offset` ms off.
if (offset !== 0) {
  const Real = Date;
  class Skewed extends Real {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(Real.now() + offset);
      else super(...(args as [number]));
    }
    static override now(): number {
      return Real.now() + offset;
    }
  }
  globalThis.Date = Skewed as DateConstructor;
}
const { Leasehold } = await import('../../../src/index.ts');
const { runCoordinator } = await import('../../../src/frameworks/node-cron.ts');
const cron = (await import('node-cron')).default;

const channel = parentChannel();
const lh = await Leasehold.connect({ url, prefix, ttl: 5_000 });
const task = cron.schedule(
  '* * * * * *',
  async (context) => {
    channel.send({ type: 'ran', slot: context.date.toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 1));
  },
  { name: 'tick', distributed: true, runCoordinator: runCoordinator(lh, { minHold: 5_000 }) },
);
channel.send({ type: 'ready' });
setTimeout(async () => {
  await task.stop();
  await lh.close();
  channel.send({ type: 'done' });
}, Number(seconds) * 1_000);
