// Model-based property test: random interleavings of acquire, tryAcquire, forceAcquire, extend,
// release and close across three Leasehold instances on one real Redis, each step checked
// against a model of who holds what: the lock key's value, every lease's signal, fencing order.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { isFenceMark } from '../../src/base/fence-mark.ts';
import {
  ConnectionClosedError,
  type Lease,
  type Leasehold,
  LeaseholdError,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
} from '../../src/index.ts';
import { connect, lockKey, mode, tracking, uniquePrefix } from '../harness/leasehold.ts';
import { until } from '../harness/poll.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

const INSTANCES = 3;
const NAMES = ['a', 'b'] as const;
const TTL = 3_000;

type Op =
  | { kind: 'acquire' | 'tryAcquire' | 'forceAcquire' | 'extend' | 'release'; i: number; n: number }
  | { kind: 'close'; i: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('acquire', 'tryAcquire', 'forceAcquire', 'extend', 'release'),
    i: fc.nat(INSTANCES - 1),
    n: fc.nat(NAMES.length - 1),
  }),
  // Closing is rarer: after it, an instance only rejects.
  { arbitrary: fc.record({ kind: fc.constant('close' as const), i: fc.nat(INSTANCES - 1) }), weight: 1 },
);

/** What the model expects of one lease. */
interface ModelLease {
  lease: Lease;
  owner: number;
  /** How it ended, as far as the model knows: undefined while it holds. */
  ended: undefined | 'released' | 'closed' | 'taken-here' | 'taken-remote' | 'taken-then-closed' | 'lost';
  releaseResult?: boolean | 'rejected';
}

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

async function runModel(ops: readonly Op[]): Promise<void> {
  const prefix = uniquePrefix('model');
  const instances: Leasehold[] = [];
  for (let i = 0; i < INSTANCES; i++) instances.push(await connect(server, { prefix, ttl: TTL }));
  const closed = new Set<number>();
  const holder = new Map<number, ModelLease>();
  const latest = new Map<string, ModelLease>();
  const leases: ModelLease[] = [];
  const lastFence = new Map<number, bigint>();
  const taken = (n: number, lease: Lease, owner: number) => {
    const fence = lastFence.get(n);
    assert.ok(
      fence === undefined || lease.fencingToken > fence,
      `fencing token ${lease.fencingToken} <= ${fence}`,
    );
    lastFence.set(n, lease.fencingToken);
    const m: ModelLease = { lease, owner, ended: undefined };
    leases.push(m);
    latest.set(`${owner}/${n}`, m);
    holder.set(n, m);
  };
  try {
    for (const op of ops) {
      const lh = instances[op.i]!;
      const isClosed = closed.has(op.i);
      if (op.kind === 'close') {
        await lh.close();
        closed.add(op.i);
        for (const m of leases) {
          if (m.owner !== op.i) continue;
          if (m.ended === undefined) m.ended = 'closed';
          // Taken over by another instance, not yet heard of (polling hears at the next extension):
          // close() may end it first, as released.
          if (m.ended === 'taken-remote') m.ended = 'taken-then-closed';
        }
        for (const [n, m] of holder) if (m.owner === op.i) holder.delete(n);
      } else if (op.kind === 'acquire' || op.kind === 'tryAcquire') {
        const name = NAMES[op.n]!;
        const attempt =
          op.kind === 'acquire'
            ? lh.acquire(name, { timeout: 50 })
            : lh.tryAcquire(name).then((l) => l ?? 'none');
        if (isClosed) {
          await assert.rejects(attempt, ConnectionClosedError);
        } else if (holder.has(op.n)) {
          if (op.kind === 'acquire') await assert.rejects(attempt, LockTimeoutError);
          else assert.equal(await attempt, 'none');
        } else {
          const lease = await attempt;
          assert.notEqual(lease, 'none', `${op.kind} of a free lock failed`);
          taken(op.n, lease as Lease, op.i);
        }
      } else if (op.kind === 'forceAcquire') {
        const attempt = lh.forceAcquire(NAMES[op.n]!);
        if (isClosed) {
          await assert.rejects(attempt, ConnectionClosedError);
        } else {
          const previous = holder.get(op.n);
          const lease = await attempt;
          if (previous !== undefined)
            previous.ended = previous.owner === op.i ? 'taken-here' : 'taken-remote';
          taken(op.n, lease, op.i);
        }
      } else {
        const m = latest.get(`${op.i}/${op.n}`);
        if (m === undefined) continue;
        if (op.kind === 'extend') {
          if (m.ended === undefined) {
            await m.lease.extend();
          } else {
            await assert.rejects(
              m.lease.extend(),
              (e) => e instanceof LockLostError || e instanceof LockReleasedError,
            );
            if (m.ended === 'taken-remote') m.ended = 'lost';
          }
        } else {
          const outcome = await m.lease.release().then(
            (held) => held,
            (error: unknown) => {
              assert.ok(error instanceof LeaseholdError, `release rejected with ${String(error)}`);
              return 'rejected' as const;
            },
          );
          if (m.releaseResult !== undefined) {
            assert.equal(outcome, false, 'a second release() has nothing to release');
          } else if (m.ended === undefined) {
            assert.equal(outcome, true, 'releasing the current holder returns true');
            m.ended = 'released';
            holder.delete(op.n);
          } else if (m.ended === 'closed' || m.ended === 'taken-then-closed') {
            assert.equal(outcome, false, 'release() after close() answers false, never rejects');
          } else {
            assert.equal(outcome, false, `releasing a lease that was ${m.ended} returns false`);
          }
          m.releaseResult = outcome;
        }
      }
      await checkState(prefix, holder, leases);
    }
    // A takeover from another instance reaches the old holder by a push or, when polling, at its
    // next extension (every third of the TTL).
    const pending = leases.filter((m) => m.ended === 'taken-remote');
    await until('every taken-over holder aborts', async () => pending.every((m) => m.lease.signal.aborted), {
      timeout: tracking ? 2_000 : TTL + 2_000,
    });
    for (const m of pending) assert.ok(m.lease.signal.reason instanceof LockLostError);
  } finally {
    await Promise.all(instances.map((lh) => lh.close()));
  }
  for (const m of leases) assert.equal(m.lease.signal.aborted, true, 'close() ends every lease');
  const keys = (await command(server.port, ['KEYS', `${prefix}:*`])) as string[];
  assert.deepEqual(
    keys.filter((key) => !key.endsWith(':fence') && !isFenceMark(key)),
    [],
    'no lock key is stranded after close()',
  );
}

/** The key of every name holds exactly the model's holder; every signal says what the model says. */
async function checkState(
  prefix: string,
  holder: Map<number, ModelLease>,
  leases: ModelLease[],
): Promise<void> {
  for (const [n, name] of NAMES.entries()) {
    const value = await command(server.port, ['GET', lockKey(prefix, name)]);
    assert.equal(value, holder.get(n)?.lease.stored ?? null, `key of "${name}" holds the model's holder`);
  }
  for (const m of leases) {
    const { aborted, reason } = m.lease.signal;
    if (m.ended === undefined) assert.equal(aborted, false, 'a holder the model trusts is not aborted');
    else if (m.ended === 'released' || m.ended === 'closed') assert.ok(reason instanceof LockReleasedError);
    else if (m.ended === 'taken-here' || m.ended === 'lost') assert.ok(reason instanceof LockLostError);
    else if (m.ended === 'taken-then-closed') {
      assert.ok(reason instanceof LockLostError || reason instanceof LockReleasedError);
    }
  }
}

describe(`mutex model (${mode})`, () => {
  test('random interleavings across three instances match the model', { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), (ops) => runModel(ops)),
      { numRuns: 60 },
    );
  });
});
