// Issue 39's reproduction, as reported: a private redis-server on the clock shim
// (test/harness/fake-clock.ts); token 1; the name idle for 61.5 s, so that its counter expires
// (IDLE_MS is 60 s); the server's wall clock stepped back 120 s; token 2. Prints both. Before the
// fence marks token 2 came out about 58 s below token 1; now it is above. Takes about 62 s:
//   node --import tsx test/repro/issue-39.ts
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold } from '../../src/index.ts';
import { FakeClock } from '../harness/fake-clock.ts';
import { lockKey, uniquePrefix } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

const clock = FakeClock.create();
if (clock === undefined) throw new Error(FakeClock.unavailable);
const server = await RedisServer.start({ env: clock.env });
const prefix = uniquePrefix('issue39');
const lh = await Leasehold.connect({ url: server.url, prefix });
try {
  const first = await lh.acquire('n');
  await first.release();
  console.log(`token 1: ${first.fencingToken}`);
  await sleep(61_500);
  const counter = `${lockKey(prefix, 'n')}:fence`;
  console.log(
    `after 61.5 s idle, the counter exists: ${(await command(server.port, ['EXISTS', counter])) === 1}`,
  );
  clock.set({ wall: -120_000 }, server.pid);
  await sleep(5);
  const second = await lh.acquire('n');
  await second.release();
  const diff = Number(second.fencingToken - first.fencingToken) / 1e6;
  console.log(
    `token 2 (clock stepped back 120 s): ${second.fencingToken} (${diff.toFixed(3)} s from token 1)`,
  );
  console.log(second.fencingToken > first.fencingToken ? 'increasing' : 'WENT BACK');
} finally {
  await lh.close();
  await server.stop();
  clock.remove();
}
