import type { Lease, LeaseCore } from '../../src/lease.ts';

/**
 * A LeaseCore with no Redis behind it, for the renewer's and dispatcher's unit tests: it confirms
 * every lease of every extension batch and counts the batches (a verification is one).
 */
export function countingCore(): LeaseCore & { batches: number } {
  const core = {
    batches: 0,
    async extendMany(items: readonly { lease: Lease; ttl: number }[]) {
      core.batches += 1;
      return items.map(() => true);
    },
    async release() {
      return true;
    },
    async hold() {
      return true;
    },
  };
  return core;
}
