import diagnosticsChannel from 'node:diagnostics_channel';
import { type Adder, metricsApi, type Recorder } from './base/telemetry.ts';
import type { LeaseholdEvents } from './events.ts';

/**
 * The `node:diagnostics_channel` channels leasehold publishes to, one per event, named
 * `leasehold:<event>`. A message is the event's payload plus `instance`, the Leasehold that
 * emitted it. Publishing costs nothing while a channel has no subscriber.
 *
 * @example
 * import diagnosticsChannel from 'node:diagnostics_channel';
 * diagnosticsChannel.subscribe('leasehold:lost', (message) => console.warn('lock lost', message));
 */
export const CHANNELS = {
  acquired: 'leasehold:acquired',
  released: 'leasehold:released',
  lost: 'leasehold:lost',
  extended: 'leasehold:extended',
  'extension-failed': 'leasehold:extension-failed',
  disconnected: 'leasehold:disconnected',
  reconnected: 'leasehold:reconnected',
  notifications: 'leasehold:notifications',
  'pending-releases': 'leasehold:pending-releases',
} as const satisfies Record<keyof LeaseholdEvents, string>;

const channels = Object.fromEntries(
  Object.entries(CHANNELS).map(([event, name]) => [event, diagnosticsChannel.channel(name)]),
) as Record<keyof LeaseholdEvents, diagnosticsChannel.Channel>;

/** The OpenTelemetry instruments, created on first use once `@opentelemetry/api` has loaded. */
interface Instruments {
  acquireDuration: Recorder;
  holdDuration: Recorder;
  held: Adder;
  losses: Adder;
  extensions: Adder;
  reconnects: Adder;
}

let instruments: Instruments | undefined;

function meter(): Instruments | undefined {
  if (instruments !== undefined) return instruments;
  const api = metricsApi();
  if (api === undefined) return undefined;
  // Created once a MeterProvider is registered, however late: until then the api hands out its
  // no-op meter, and every event would pay for bookkeeping that records nothing.
  const m = api.metrics.getMeter('leasehold');
  if (m === api.createNoopMeter?.()) return undefined;
  instruments = {
    acquireDuration: m.createHistogram('leasehold.lock.acquire.duration', {
      unit: 'ms',
      description: 'Time from an acquire call until the lease was held, waiting included',
    }),
    holdDuration: m.createHistogram('leasehold.lock.hold.duration', {
      unit: 'ms',
      description: 'Time a lease was held, until released or lost',
    }),
    held: m.createUpDownCounter('leasehold.lock.held', { unit: '{lease}', description: 'Leases held now' }),
    losses: m.createCounter('leasehold.lock.losses', {
      unit: '{lease}',
      description: 'Leases lost (attribute leasehold.loss.reason)',
    }),
    extensions: m.createCounter('leasehold.lock.extensions', {
      unit: '{extension}',
      description: 'Automatic extensions (attribute leasehold.extension.outcome: ok | failed)',
    }),
    reconnects: m.createCounter('leasehold.connection.reconnects', {
      unit: '{reconnect}',
      description: 'Times tracking was re-armed after a reconnect',
    }),
  };
  return instruments;
}

/** For tests: forget the instruments so that a newly registered MeterProvider is picked up. */
export function resetTelemetry(): void {
  instruments = undefined;
}

/**
 * Per-instance bridge from events to channels and metrics.
 */
export class Observer {
  readonly #instance: object;
  /** When each held lease was acquired (monotonic), for the hold-duration histogram. */
  readonly #since = new Map<string, number>();

  constructor(instance: object) {
    this.#instance = instance;
  }

  observe<E extends keyof LeaseholdEvents>(event: E, payload: LeaseholdEvents[E]): void {
    const channel = channels[event];
    if (channel.hasSubscribers) channel.publish({ ...payload, instance: this.#instance });
    const m = meter();
    if (m === undefined) return;
    const p = payload as Partial<LeaseholdEvents['lost']> & { waited?: number };
    const id = `${p.fencingToken}\u0000${p.name}`;
    switch (event) {
      case 'acquired':
        m.acquireDuration.record(p.waited ?? 0);
        m.held.add(1);
        this.#since.set(id, performance.now());
        break;
      case 'released':
      case 'lost': {
        const since = this.#since.get(id);
        this.#since.delete(id);
        if (since !== undefined) {
          m.held.add(-1);
          m.holdDuration.record(performance.now() - since);
        }
        if (event === 'lost') {
          const reason = (p.error as { reason?: string } | undefined)?.reason ?? 'unknown';
          m.losses.add(1, { 'leasehold.loss.reason': reason });
        }
        break;
      }
      case 'extended':
        m.extensions.add(1, { 'leasehold.extension.outcome': 'ok' });
        break;
      case 'extension-failed':
        m.extensions.add(1, { 'leasehold.extension.outcome': 'failed' });
        break;
      case 'reconnected':
        m.reconnects.add(1);
        break;
    }
  }
}
