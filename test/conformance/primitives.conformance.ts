// The semaphore, read-write lock, fair lock and election behaviour every backend must share. Run
// against Redis (test/integration/conformance-redis.test.ts) and against the in-memory backend
// (test/unit/conformance-memory.test.ts), so that the two cannot drift apart.
import { describe } from 'node:test';
import { electionConformance } from './election.conformance.ts';
import { fairConformance } from './fair.conformance.ts';
import { jobsConformance } from './jobs.conformance.ts';
import type { ConformanceTarget } from './mutex.conformance.ts';
import { rwlockConformance } from './rwlock.conformance.ts';
import { semaphoreConformance } from './semaphore.conformance.ts';
import { type Suite, usePool } from './suite.ts';

export function primitivesConformance(label: string, start: () => Promise<ConformanceTarget>): void {
  describe(`primitives conformance: ${label}`, () => {
    const pool = usePool('prim', start);
    const running = pool.target;
    const suite: Suite = {
      instances: pool.instances,
      command: (args) => running().command(args),
      async serverMs() {
        const [seconds, micros] = (await running().command(['TIME'])) as [string, string];
        return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      },
    };
    semaphoreConformance(suite);
    rwlockConformance(suite);
    fairConformance(suite);
    electionConformance(suite);
    jobsConformance(suite);
  });
}
