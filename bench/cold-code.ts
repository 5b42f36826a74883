// How much slower the same JavaScript runs after the process has been idle (issue 27,
// docs/low-latency.md): `node --import tsx bench/cold-code.ts` (about 30 s).
//
// A fixed piece of work (a Map of 200 small objects, a 16-byte random token: the kind of code a
// lock library runs on a handoff) is timed 60 times after each of these, per idle time:
//   sleep   the process sleeps (a timer), as an idle waiter or a holder does
//   spin    the event loop spins on setImmediate meanwhile (the CPU stays busy, other code runs)
//   busy    the process runs the same work in a loop meanwhile (the code stays warm)
// The p50 per cell goes to stdout. On the bench machine (2 vCPUs, AMD EPYC): 0.027 ms after no
// idle time; after a sleep of 2, 20, 50 and 200 ms 0.039, 0.052, 0.101 and 0.105 ms (spinning on
// setImmediate meanwhile: about the same); 0.020-0.021 ms when busy with the same work.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

const work = (): number => {
  let sum = 0;
  const map = new Map<string, { i: number }>();
  for (let i = 0; i < 200; i++) {
    map.set(`k${i}`, { i });
    sum += map.get(`k${i >> 1}`)!.i;
  }
  return sum + randomBytes(16).toString('base64url').length;
};

async function cell(idle: number, mode: 'sleep' | 'spin' | 'busy'): Promise<number> {
  let spinning = mode === 'spin';
  const spin = () => {
    if (spinning) setImmediate(spin);
  };
  spin();
  const samples: number[] = [];
  for (let i = 0; i < 60; i++) {
    if (mode === 'busy') {
      const end = performance.now() + idle;
      while (performance.now() < end) work();
    } else await sleep(idle);
    const t = performance.now();
    work();
    samples.push(performance.now() - t);
  }
  spinning = false;
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1]!;
}

console.log('| idle before the work | sleep | spin | busy (same work) |');
console.log('| ---: | ---: | ---: | ---: |');
for (const idle of [0, 2, 20, 50, 200]) {
  const row = [];
  for (const mode of ['sleep', 'spin', 'busy'] as const) row.push((await cell(idle, mode)).toFixed(4));
  console.log(`| ${idle} ms | ${row.join(' ms | ')} ms |`);
}
