// The short version of `npm run safety`: a few fault scenarios, each checked by the safety checker.
// The full matrix (every scenario and mode, more rounds, a longer TTL) writes docs/safety.md.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runScenario } from './engine.ts';
import { MODES, pendingReason } from './modes.ts';
import { FencedResource } from './resource.ts';
import { scenario } from './scenarios.ts';
import type { FaultPrimitive, ModeName } from './types.ts';
import { violations } from './verdict.ts';

const SHORT: [string, ModeName, FaultPrimitive?][] = [
  ['partition', 'single'],
  ['holder-sigstop', 'single'],
  ['redis-sigstop', 'single'],
  ['restart-empty', 'single'],
  ['clock-slow', 'single'],
  ['quorum-minority', 'quorum'],
  ['redis-stall-long', 'single'],
  ['blackhole-long', 'single'],
  // Waiters of the other exclusive primitives are granted directly too: the faults that found a
  // give-back deleting a re-taken lease (restart-empty) and that cut a holder off.
  ['restart-empty', 'single', 'write'],
  ['partition', 'single', 'semaphore'],
  ['redis-sigstop', 'single', 'fair'],
  // PostgreSQL (a server of the run's own): a partition, a stalled server, a crash and restart,
  // a black hole longer than any lease.
  ['partition', 'postgres'],
  ['redis-sigstop', 'postgres'],
  ['server-crash', 'postgres'],
  ['blackhole-long', 'postgres'],
];

let resource: FencedResource;
before(async () => {
  resource = await FencedResource.start();
});
after(async () => {
  await resource.stop();
});

describe('safety checker (short)', { concurrency: 1 }, () => {
  for (const [id, modeName, primitive = 'mutex'] of SHORT) {
    const s = scenario(id);
    const mode = MODES[modeName];
    // A Redis server line's run (npm run test:servers) is about Redis: the PostgreSQL rows do not
    // depend on it and run in the main suite.
    const line = process.env['LEASEHOLD_SERVER_LINE'];
    const pending =
      modeName === 'postgres' && line !== undefined
        ? `PostgreSQL rows run in the main suite, not per Redis server line (${line})`
        : pendingReason(mode, s);
    const where = primitive === 'mutex' ? modeName : `${modeName} (${primitive})`;
    test(`${id} x ${where}: ${s.title}`, { timeout: 60_000, skip: pending ?? false }, async () => {
      const result = await runScenario(s, mode, { ttl: 400, rounds: 1, workers: 2, resource, primitive });
      console.log(`# ${id} x ${where}: ${JSON.stringify(result.notes)} ${result.seconds.toFixed(1)} s`);
      const broken = violations(result, s);
      assert.deepEqual(broken, [], `${id}: ${broken.join('\n')}\n${result.lapseDetails.join('\n')}`);
      assert.ok(result.criticalSections >= 2, `only ${result.criticalSections} critical sections ran`);
    });
  }
});
