// The semaphore, read-write lock, fair lock and election behaviour every backend must share. Run
// against Redis (test/integration/conformance-redis.test.ts) and against the in-memory backend
// (test/unit/conformance-memory.test.ts), so that the two cannot drift apart.
import { after, before, describe } from 'node:test';
import type { Leasehold } from '../../src/index.ts';
import { uniquePrefix } from '../harness/leasehold.ts';
import { electionConformance } from './election.conformance.ts';
import { fairConformance } from './fair.conformance.ts';
import type { ConformanceTarget } from './mutex.conformance.ts';
import { rwlockConformance } from './rwlock.conformance.ts';
import { semaphoreConformance } from './semaphore.conformance.ts';
import type { Suite } from './suite.ts';

export function primitivesConformance(label: string, start: () => Promise<ConformanceTarget>): void {
  describe(`primitives conformance: ${label}`, () => {
    let target: ConformanceTarget | undefined;
    const open: Leasehold[] = [];
    before(async () => {
      target = await start();
    });
    after(async () => {
      await Promise.all(open.map((lh) => lh.close()));
      await target?.close();
    });
    const running = (): ConformanceTarget => {
      if (target === undefined) throw new Error('the target starts in before()');
      return target;
    };
    const suite: Suite = {
      async instances(...ttls) {
        const prefix = uniquePrefix('prim');
        const lhs = await Promise.all(ttls.map((ttl) => running().connect({ prefix, ttl })));
        open.push(...lhs);
        return { prefix, lhs };
      },
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
  });
}
