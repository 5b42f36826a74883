/**
 * `@opentelemetry/api`, when the application has it: an optional peer, loaded once per process
 * with a computed specifier (bundlers and TypeScript never require it), never imported statically.
 * Absent, the import fails once and metrics and spans stay off: no dependency, no cost.
 * Leasehold.connect() awaits loadTelemetry(); src/diagnostics.ts makes the metrics from it and
 * src/engine/tracing.ts the spans.
 */

/** The subset of `@opentelemetry/api`'s metrics leasehold uses. */
export interface MetricsApi {
  metrics: {
    getMeter(
      name: string,
      version?: string,
    ): {
      createHistogram(name: string, options: { unit: string; description: string }): Recorder;
      createCounter(name: string, options: { unit: string; description: string }): Adder;
      createUpDownCounter(name: string, options: { unit: string; description: string }): Adder;
    };
  };
  /** The api's one no-op meter (what getMeter gives while no MeterProvider is registered). */
  createNoopMeter?(): unknown;
}
export interface Recorder {
  record(value: number, attributes?: Record<string, string>): void;
}
export interface Adder {
  add(value: number, attributes?: Record<string, string>): void;
}

/** The subset of `@opentelemetry/api`'s tracing leasehold uses. */
export interface TraceApi {
  trace: {
    getTracer(name: string): {
      startSpan(name: string, options: { kind: number; attributes: SpanAttributes }, context?: unknown): Span;
    };
  };
  context: { active(): unknown };
}

export type SpanAttributes = Record<string, string | number | boolean>;

/** The subset of `@opentelemetry/api`'s Span leasehold uses. */
export interface Span {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
  isRecording(): boolean;
}

let metrics: MetricsApi | undefined;
let tracing: TraceApi | undefined;
let loading: Promise<void> | undefined;

export function loadTelemetry(): Promise<void> {
  if (loading === undefined) {
    const specifier = ['@opentelemetry', 'api'].join('/');
    loading = import(specifier).then(
      (mod: unknown) => {
        const api = ((mod as { default?: unknown }).default ?? mod) as Partial<MetricsApi & TraceApi>;
        // The ESM build's default export holds the APIs only; createNoopMeter is a named export.
        const noop = (mod as Partial<MetricsApi>).createNoopMeter ?? api.createNoopMeter;
        if (typeof api.metrics?.getMeter === 'function')
          metrics = {
            metrics: api.metrics,
            ...(typeof noop === 'function' ? { createNoopMeter: noop } : {}),
          };
        if (typeof api.trace?.getTracer === 'function' && typeof api.context?.active === 'function')
          tracing = api as TraceApi;
      },
      () => {},
    );
  }
  return loading;
}

/** The metrics half, once loadTelemetry() found the api. */
export function metricsApi(): MetricsApi | undefined {
  return metrics;
}

/** The tracing half, once loadTelemetry() found the api. */
export function traceApi(): TraceApi | undefined {
  return tracing;
}
