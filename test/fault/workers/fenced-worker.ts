// A lock holder for the safety checker. It loops: acquire, a critical section of several fenced
// writes to the protected resource spaced `gap` ms apart (checking `lease.signal` right before
// each), release. Everything it sees goes to the parent as NDJSON with times on the host's
// monotonic clock (hostNow(): one clock for every process, immune to the skew a scenario may
// install with test/harness/skew-clock.ts).
//
// argv[2]: a JSON WorkerConfig.
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import {
  type Lease,
  Leasehold,
  LockLostError,
  LockReleasedError,
  LockTimeoutError,
} from '../../../src/index.ts';
import { hostNow } from '../../harness/host-clock.ts';
import { skewFromEnv } from '../../harness/skew-clock.ts';
import { parentChannel } from '../../harness/worker.ts';
import { fencedWrite } from '../resource.ts';
import type { FaultPrimitive } from '../types.ts';

export interface WorkerConfig {
  id: string;
  /** Leasehold.connect() options (url / nodes / cluster) pointing through this worker's proxies. */
  connect: Record<string, unknown>;
  prefix: string;
  name: string;
  ttl: number;
  resourceUrl: string;
  namespace: string;
  /** Fenced writes per critical section, and the pause after each. */
  writes: number;
  gap: number;
  /** Work between checking the signal and writing, which does not look at the signal. */
  work: number;
  /** What the workers contend for (default 'mutex'). */
  primitive?: FaultPrimitive;
}

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const channel = parentChannel();
const { rate } = skewFromEnv();
const send = (message: Record<string, unknown>) => channel.send({ worker: config.id, ...message });
const report = (where: string) => (error: unknown) =>
  send({ type: 'error', where, message: String((error as Error)?.stack ?? error), at: hostNow() });
process.on('unhandledRejection', report('unhandledRejection'));
process.on('uncaughtException', report('uncaughtException'));

/**
 * The library's end of validity (its monotonic `performance.now()` clock, skewed in a skewed worker)
 * on the host clock. Not `lease.expiresAt`: that goes through Date.now(), whole milliseconds.
 */
const validityEnd = (lease: Lease): number => hostNow() + (lease.validUntil - performance.now()) / rate;

const resource = createClient({ url: config.resourceUrl });
resource.on('error', report('resource client'));
await resource.connect();
const lh = await Leasehold.connect({
  ...config.connect,
  prefix: config.prefix,
  ttl: config.ttl,
  retryDelay: 20,
});
const ends = new Map<bigint, number>();
lh.on('extended', ({ fencingToken }) => {
  const lease = current;
  if (lease !== undefined && lease.fencingToken === fencingToken && !lease.signal.aborted) {
    ends.set(fencingToken, validityEnd(lease));
  }
});
let current: Lease | undefined;
const stopping = new AbortController();
channel.onMessage((message) => {
  if (message['type'] === 'stop') stopping.abort();
  // An event-loop stall: a busy wait (a long synchronous job, a slow JSON.parse) that leaves every
  // timer, renewal and socket read of this process waiting until it ends.
  if (message['type'] === 'stall') {
    const from = hostNow();
    const until = from + Number(message['ms']);
    while (hostNow() < until) {}
    send({ type: 'stalled', from, to: hostNow() });
  }
});

async function criticalSection(lease: Lease): Promise<void> {
  const token = lease.fencingToken;
  current = lease;
  ends.set(token, validityEnd(lease));
  const enterAt = hostNow();
  send({ type: 'enter', token: String(token), at: enterAt, validityEnd: ends.get(token) });
  // A reply that arrives after validity ran out hands over a lease whose signal aborts at first read.
  const signal = lease.signal;
  const onAbort = () => {
    const reason = signal.reason as Error;
    const kind =
      reason instanceof LockLostError
        ? reason.reason
        : reason instanceof LockReleasedError
          ? 'released'
          : 'other';
    send({ type: 'abort', token: String(token), at: hostNow(), reason: kind, validityEnd: ends.get(token) });
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  for (let seq = 0; seq < config.writes && !stopping.signal.aborted; seq++) {
    const checkAt = hostNow();
    if (lease.signal.aborted) break;
    send({ type: 'check', token: String(token), seq, at: checkAt, validityEnd: ends.get(token) });
    await sleep(config.work);
    const accepted = await fencedWrite(resource, config.namespace, token, config.id, seq);
    send({ type: 'write', token: String(token), seq, checkAt, accepted, doneAt: hostNow() });
    await sleep(config.gap, undefined, { signal: lease.signal }).catch(() => {});
  }
  const exitAt = hostNow();
  // Said before release(): a release that never settles (a hung call) leaves this without an exit.
  send({ type: 'releasing', token: String(token), at: exitAt });
  let released: string;
  try {
    released = String(await lease.release());
  } catch (error) {
    released = `error ${(error as { code?: string }).code ?? String(error)}`;
  }
  const releasedAt = hostNow();
  current = undefined;
  send({
    type: 'exit',
    token: String(token),
    at: exitAt,
    released,
    releasedAt,
    validityEnd: ends.get(token),
  });
  ends.delete(token);
}

/** One exclusive lease of the configured primitive. */
function take(options: { timeout: number; signal: AbortSignal }): Promise<Lease> {
  switch (config.primitive ?? 'mutex') {
    case 'mutex':
      return lh.acquire(config.name, options);
    case 'semaphore':
      return lh.semaphore(config.name, { limit: 1 }).acquire(options);
    case 'write':
      return lh.readWriteLock(config.name).write(options);
    case 'fair':
      return lh.fairLock(config.name).acquire(options);
  }
}

send({ type: 'ready', pid: process.pid });
while (!stopping.signal.aborted) {
  let lease: Lease;
  try {
    lease = await take({ timeout: config.ttl * 4, signal: stopping.signal });
  } catch (error) {
    if (stopping.signal.aborted) break;
    // Timeouts and "Redis did not answer" are expected under faults; anything else is reported.
    if (!(error instanceof LockTimeoutError)) {
      const code = (error as { code?: unknown }).code;
      send({ type: 'acquire-error', code: typeof code === 'string' ? code : 'none', message: String(error) });
    }
    await sleep(20);
    continue;
  }
  await criticalSection(lease);
}
const closing = hostNow();
await lh.close().catch(report('close'));
const closeMs = hostNow() - closing;
await resource.close().catch(() => {});
send({ type: 'done', at: hostNow(), closeMs });
process.exit(0);
