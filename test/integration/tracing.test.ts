// OpenTelemetry spans (docs/observability.md, "Traces") through the real @opentelemetry/api and
// SDK: a BasicTracerProvider with the in-memory exporter, and the AsyncLocalStorage context
// manager an application registers, so that leasehold's spans are children of the caller's.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { context, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { resetTracing } from '../../src/engine/tracing.ts';
import { LockTimeoutError } from '../../src/index.ts';
import { aborted, connect, uniquePrefix, useRedis, within } from '../harness/leasehold.ts';

const redis = useRedis();
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contexts = new AsyncLocalStorageContextManager();

before(() => {
  context.setGlobalContextManager(contexts.enable());
  trace.setGlobalTracerProvider(provider);
  resetTracing();
});
after(async () => {
  trace.disable();
  context.disable();
  resetTracing();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

/** The finished spans named `name`. */
const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const only = (name: string): ReadableSpan => {
  const found = spans(name);
  assert.equal(found.length, 1, `one ${name} span: ${exporter.getFinishedSpans().map((s) => s.name)}`);
  return found[0]!;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** Runs `fn` inside a span of the application's own, as a request handler would. */
function inRequest<T>(fn: (request: Span) => Promise<T>): Promise<T> {
  return trace.getTracer('app').startActiveSpan('request', async (request) => {
    try {
      return await fn(request);
    } finally {
      request.end();
    }
  });
}

describe('OpenTelemetry spans', () => {
  test('acquire, hold and release are spans under the caller’s, with name, primitive, outcome and token', async () => {
    const lh = await connect(redis.server, { prefix: uniquePrefix('trace') });
    try {
      const { request, token } = await inRequest(async (request) => {
        const lease = await lh.acquire('payout');
        await lease.release();
        return { request: request.spanContext().spanId, token: lease.fencingToken.toString() };
      });
      const acquire = only('leasehold.acquire');
      const hold = only('leasehold.hold');
      const release = only('leasehold.release');
      for (const span of [acquire, hold, release]) {
        assert.equal(parentOf(span), request, `${span.name} is a child of the request`);
        assert.equal(span.attributes['leasehold.lock.name'], 'payout');
        assert.equal(span.attributes['leasehold.primitive'], 'mutex');
        assert.equal(span.instrumentationScope.name, 'leasehold');
      }
      assert.equal(acquire.attributes['leasehold.acquire.outcome'], 'acquired');
      assert.equal(acquire.attributes['leasehold.fencing_token'], token);
      assert.equal(hold.attributes['leasehold.hold.outcome'], 'released');
      assert.equal(hold.attributes['leasehold.fencing_token'], token);
      assert.equal(release.attributes['leasehold.release.outcome'], 'released');
      assert.equal(acquire.status.code, 0, 'unset: no error');
    } finally {
      await lh.close();
    }
  });

  test('a wait that times out is an error span; a busy tryAcquire says busy; the wait is the span’s length', async () => {
    const prefix = uniquePrefix('trace');
    const holder = await connect(redis.server, { prefix });
    const waiter = await connect(redis.server, { prefix });
    try {
      const lease = await holder.acquire('report');
      exporter.reset();
      await assert.rejects(waiter.acquire('report', { timeout: 150 }), LockTimeoutError);
      assert.equal(await waiter.tryAcquire('report'), undefined);
      const [timedOut, busy] = spans('leasehold.acquire');
      assert.ok(timedOut && busy, 'two acquire spans');
      assert.equal(timedOut.attributes['leasehold.acquire.outcome'], 'error');
      assert.equal(timedOut.attributes['error.type'], 'LEASEHOLD_ERR_LOCK_TIMEOUT');
      assert.equal(timedOut.status.code, 2, 'ERROR');
      const waited = timedOut.duration[0] * 1_000 + timedOut.duration[1] / 1e6;
      assert.ok(waited >= 140, `the span covers the wait: ${waited} ms`);
      assert.equal(busy.attributes['leasehold.acquire.outcome'], 'busy');
      await lease.release();
    } finally {
      await waiter.close();
      await holder.close();
    }
  });

  test('a lease taken from its holder ends its hold span as lost, with the reason', async () => {
    const prefix = uniquePrefix('trace');
    const holder = await connect(redis.server, { prefix });
    const other = await connect(redis.server, { prefix });
    try {
      // A short TTL: in polling mode (GLIDE) a holder hears of a takeover at its next renewal.
      const lease = await holder.acquire('ledger', { ttl: 600 });
      const taken = await other.forceAcquire('ledger');
      await within(aborted(lease.signal), 5_000, 'the holder hears of the takeover');
      const holds = spans('leasehold.hold').filter((s) => s.attributes['leasehold.hold.outcome'] === 'lost');
      assert.equal(holds.length, 1, 'the first holder’s hold span ended lost');
      assert.equal(holds[0]!.attributes['leasehold.loss.reason'], 'taken');
      assert.equal(holds[0]!.attributes['error.type'], 'LEASEHOLD_ERR_LOCK_LOST');
      assert.equal(holds[0]!.status.code, 2);
      await taken.release();
    } finally {
      await other.close();
      await holder.close();
    }
  });

  test('every primitive names itself on its spans', async () => {
    const lh = await connect(redis.server, { prefix: uniquePrefix('trace') });
    try {
      await (await lh.semaphore('pool', { limit: 2 }).acquire()).release();
      await (await lh.readWriteLock('doc').write()).release();
      await (await lh.fairLock('line').acquire()).release();
      await (await lh.election('leader').campaign('me')).release();
      await (await lh.multiLock(['a', 'b']).acquire()).release();
      const seen = spans('leasehold.acquire').map(
        (s) => `${s.attributes['leasehold.primitive']}/${s.attributes['leasehold.operation']}`,
      );
      assert.deepEqual(seen, [
        'semaphore/semaphore acquire',
        'rwlock/write lock',
        'fair/fair acquire',
        'election/campaign',
        'multiLock/multiLock acquire',
      ]);
      assert.equal(spans('leasehold.release').length, 5);
    } finally {
      await lh.close();
    }
  });

  test('no spans while no TracerProvider is registered, and locks work as before', async () => {
    trace.disable();
    resetTracing();
    const lh = await connect(redis.server, { prefix: uniquePrefix('trace') });
    try {
      await (await lh.acquire('quiet')).release();
      assert.deepEqual(exporter.getFinishedSpans(), []);
    } finally {
      await lh.close();
      trace.setGlobalTracerProvider(provider);
      resetTracing();
    }
  });
});
