// Traces: leasehold's spans (leasehold.acquire, leasehold.hold, leasehold.release) under the
// application's own, printed by the OpenTelemetry SDK's console exporter. In production, register
// your SDK (NodeSDK with an OTLP exporter to Jaeger, Tempo, ...) instead: leasehold needs nothing
// else. docs/observability.md, "Traces".
// Run: REDIS_URL=redis://127.0.0.1:6379 node --import tsx examples/tracing.ts
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Leasehold } from 'leasehold';

// What an application's tracing set-up does once at start (NodeSDK does both).
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const kept = new InMemorySpanExporter(); // only for the check at the end
trace.setGlobalTracerProvider(
  new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter()), new SimpleSpanProcessor(kept)],
  }),
);

const lh = await Leasehold.connect({ ttl: 5_000 }); // url: REDIS_URL, else 127.0.0.1:6379
await trace.getTracer('billing').startActiveSpan('nightly invoices', async (job) => {
  // The wait for the lock, the time it was held and its release appear under this job's span.
  await lh.withLock('example:invoices', async (lease) => {
    console.log(`invoicing with fencing token ${lease.fencingToken}`);
  });
  job.end();
});
await lh.close();

const seen = kept.getFinishedSpans().map((span) => `${span.name} (parent ${span.parentSpanContext?.spanId})`);
console.log(seen.join('\n'));
for (const name of ['leasehold.acquire', 'leasehold.hold', 'leasehold.release']) {
  if (!seen.some((line) => line.startsWith(name))) throw new Error(`no ${name} span`);
}
