// The short version of `npm run safety`: a few fault scenarios, each checked by the safety checker.
// The full matrix (every scenario and mode, more rounds, a longer TTL) writes docs/safety.md.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runScenario } from './engine.ts';
import { MODES, pendingReason } from './modes.ts';
import { FencedResource } from './resource.ts';
import { scenario } from './scenarios.ts';
import type { ModeName } from './types.ts';
import { violations } from './verdict.ts';

const SHORT: [string, ModeName][] = [
  ['partition', 'single'],
  ['holder-sigstop', 'single'],
  ['redis-sigstop', 'single'],
  ['restart-empty', 'single'],
  ['clock-slow', 'single'],
  ['quorum-minority', 'quorum'],
  ['redis-stall-long', 'single'],
  ['blackhole-long', 'single'],
];

let resource: FencedResource;
before(async () => {
  resource = await FencedResource.start();
});
after(async () => {
  await resource.stop();
});

describe('safety checker (short)', { concurrency: 1 }, () => {
  for (const [id, modeName] of SHORT) {
    const s = scenario(id);
    const mode = MODES[modeName];
    const pending = pendingReason(mode, s);
    test(`${id} x ${modeName}: ${s.title}`, { timeout: 60_000, skip: pending ?? false }, async () => {
      const result = await runScenario(s, mode, { ttl: 400, rounds: 1, workers: 2, resource });
      console.log(`# ${id} x ${modeName}: ${JSON.stringify(result.notes)} ${result.seconds.toFixed(1)} s`);
      const broken = violations(result, s);
      assert.deepEqual(broken, [], `${id}: ${broken.join('\n')}\n${result.lapseDetails.join('\n')}`);
      assert.ok(result.criticalSections >= 2, `only ${result.criticalSections} critical sections ran`);
    });
  }
});
