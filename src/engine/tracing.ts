import { type Span, type SpanAttributes, type TraceApi, traceApi } from '../base/telemetry.ts';
import { LockLostError, LockReleasedError } from '../errors.ts';
import type { Lease } from '../lease.ts';
import type { Primitive } from '../options/inspect.ts';

/**
 * OpenTelemetry spans around the three things a lock's user waits on or cares about
 * (docs/observability.md, "Traces"):
 *
 * - `leasehold.acquire`: from the call until the lease is held or the call fails (the wait);
 * - `leasehold.hold`: from the grant until the lease ends, released or lost (with the reason);
 * - `leasehold.release`: the release's round trip.
 *
 * Lock names go on spans as attributes (a trace has no cardinality limit, unlike metrics); span
 * names stay low-cardinality. Nothing is made while no tracer records: without
 * `@opentelemetry/api` installed a call costs one check, and with it installed but no
 * TracerProvider registered (or the span not sampled) one non-recording span.
 */

/** What leasehold's primitives are called on spans (`leasehold.primitive`): a multiLock is its own. */
export type TracedPrimitive = Primitive | 'multiLock';

/** What a span is about: the spec's primitive and operation ('write lock', 'campaign', ...). */
export interface Traced {
  readonly primitive: TracedPrimitive;
  readonly operation: string;
}

/** SpanStatusCode.ERROR and SpanKind.INTERNAL: fixed by the OpenTelemetry specification. */
const STATUS_ERROR = 2;
const KIND_INTERNAL = 0;

type Tracer = ReturnType<TraceApi['trace']['getTracer']>;
/**
 * The api's tracer, got once: a proxy that follows a TracerProvider registered later (getTracer
 * on the proxy provider makes a new proxy per call while none is registered).
 */
let tracer: Tracer | undefined;

/** For tests: forget the tracer, so that a newly registered TracerProvider is used. */
export function resetTracing(): void {
  tracer = undefined;
}

/** A span begun, or undefined when nothing records it (no api, no provider, not sampled). */
function begin(name: string, on: Traced, lockName: string, parent?: unknown): Span | undefined {
  const api = traceApi();
  if (api === undefined) return undefined;
  tracer ??= api.trace.getTracer('leasehold');
  const attributes: SpanAttributes = {
    'leasehold.lock.name': lockName,
    'leasehold.primitive': on.primitive,
    'leasehold.operation': on.operation,
  };
  const span = tracer.startSpan(name, { kind: KIND_INTERNAL, attributes }, parent);
  return span.isRecording() ? span : undefined;
}

/** Marks `span` failed with `error` (OpenTelemetry's `error.type`: the LeaseholdError code). */
function fail(span: Span, error: unknown): void {
  const e = error as { code?: unknown; name?: unknown; message?: unknown } | undefined;
  const type = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
  span.setAttribute('error.type', type);
  span.setStatus({ code: STATUS_ERROR, message: typeof e?.message === 'string' ? e.message : String(error) });
}

/**
 * `acquire()` inside a `leasehold.acquire` span (outcome `acquired`, `busy` for a one-attempt
 * call that found the name taken, or `error` with `error.type`), and the lease it gives inside a
 * `leasehold.hold` span, both children of the caller's active context.
 */
export function traceAcquire<L extends Lease | undefined>(
  on: Traced,
  lockName: string,
  acquire: () => Promise<L>,
): Promise<L> {
  const api = traceApi();
  if (api === undefined) return acquire();
  const parent = api.context.active();
  const span = begin('leasehold.acquire', on, lockName, parent);
  if (span === undefined) return acquire();
  return acquire().then(
    (lease) => {
      span.setAttribute('leasehold.acquire.outcome', lease === undefined ? 'busy' : 'acquired');
      if (lease !== undefined) {
        span.setAttribute('leasehold.fencing_token', lease.fencingToken.toString());
        traceHold(on, lease, parent);
      }
      span.end();
      return lease;
    },
    (error: unknown) => {
      span.setAttribute('leasehold.acquire.outcome', 'error');
      fail(span, error);
      span.end();
      throw error;
    },
  );
}

/** A `leasehold.hold` span that ends with the lease: `released`, or `lost` with its reason. */
function traceHold(on: Traced, lease: Lease, parent: unknown): void {
  const span = begin('leasehold.hold', on, lease.name, parent);
  if (span === undefined) return;
  span.setAttribute('leasehold.fencing_token', lease.fencingToken.toString());
  const signal = lease.signal;
  const end = () => {
    const reason: unknown = signal.reason;
    if (reason instanceof LockReleasedError) span.setAttribute('leasehold.hold.outcome', 'released');
    else {
      span.setAttribute('leasehold.hold.outcome', 'lost');
      if (reason instanceof LockLostError) span.setAttribute('leasehold.loss.reason', reason.reason);
      fail(span, reason);
    }
    span.end();
  };
  if (signal.aborted) end();
  else signal.addEventListener('abort', end, { once: true });
}

/**
 * A release (or a minHold hold) inside a `leasehold.release` span: outcome `released`, or
 * `not-held` when the lease was no longer held, or `error`.
 */
export function traceRelease(
  on: Traced,
  lockName: string,
  release: () => Promise<boolean>,
): Promise<boolean> {
  const span = begin('leasehold.release', on, lockName);
  if (span === undefined) return release();
  return release().then(
    (held) => {
      span.setAttribute('leasehold.release.outcome', held ? 'released' : 'not-held');
      span.end();
      return held;
    },
    (error: unknown) => {
      span.setAttribute('leasehold.release.outcome', 'error');
      fail(span, error);
      span.end();
      throw error;
    },
  );
}
