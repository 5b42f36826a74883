import type { Driver } from '../driver/types.ts';
import type { Context } from '../engine/context.ts';
import { Engine } from '../engine/engine.ts';
import { GiveBacks } from '../engine/give-backs.ts';
import { Grants } from '../engine/grants.ts';
import { Renewer } from '../engine/renewer.ts';
import { Warmth } from '../engine/warmth.ts';
import { Inspector } from '../inspect/inspector.ts';
import { Dispatcher } from '../notify/dispatcher.ts';
import type { ValidConnectOptions } from '../options/index.ts';
import { keyMajority } from '../runners/key-majority.ts';
import { QuorumRunner } from '../runners/quorum-runner.ts';
import { type Runner, SingleRunner } from '../runners/runner.ts';
import { Connections } from './connections.ts';

/** What one Leasehold instance runs on, wired together. */
export interface Wiring {
  readonly engine: Engine;
  readonly connections: Connections;
  readonly inspector: Inspector;
  readonly dispatcher: Dispatcher;
  readonly renewer: Renewer;
  readonly giveBacks: GiveBacks;
  /** The quorum runner (independent masters, or a key majority on a Cluster), if any. */
  readonly quorum: QuorumRunner | undefined;
}

/**
 * Wires an instance: the runners over its drivers (one Redis, a quorum of nodes, or a key
 * majority of one Cluster), the engine with its dispatcher, renewer and give-backs, the
 * connections' handling of pushes and drops, and the inspector. `emit` reports to the instance;
 * `closing` says whether close() was called.
 */
export function wire(
  options: ValidConnectOptions,
  drivers: readonly Driver[],
  emit: Context['emit'],
  closing: () => boolean,
): Wiring {
  const driver = drivers[0]!;
  const dispatcher = new Dispatcher();
  const renewer = new Renewer();
  const giveBacks = new GiveBacks(emit, options.retryDelay);
  const keys = options.cluster?.keyMajority;
  const quorum =
    drivers.length > 1
      ? new QuorumRunner(drivers.map((d) => ({ driver: d })))
      : keys === undefined
        ? undefined
        : keyMajority(driver, keys);
  // A key majority runs the lock specs on a quorum of keys; the others keep one key on the cluster.
  const single = drivers.length > 1 ? undefined : new SingleRunner(driver);
  const ctx: Context = {
    runner: (quorum ?? single) as Runner,
    single,
    dispatcher,
    // Direct grants need the lock on one Redis and a subscription beside it (Driver.subscribe).
    grants:
      quorum === undefined && driver.subscribe !== undefined ? new Grants(driver, options.prefix) : undefined,
    renewer,
    // One PING per interval on each node's command connection (a quorum waits on all of them);
    // the in-memory backend has no connection to keep warm.
    warmth:
      options.lowLatency === undefined || options.memory !== undefined
        ? undefined
        : new Warmth(options.lowLatency, () => Promise.all(drivers.map((d) => d.command(['PING'])))),
    prefix: options.prefix,
    ttl: options.ttl,
    retryDelay: options.retryDelay,
    commandTimeout: options.commandTimeout,
    owner: options.owner,
    get closed() {
      return closing();
    },
    emit,
    giveBacks,
  };
  const engine = new Engine(ctx);
  renewer.observer = {
    extended: ({ name, fencingToken, ttl, expiresAt }) =>
      emit('extended', { name, fencingToken, ttl, expiresAt }),
    extensionFailed: ({ name, fencingToken, expiresAt }, error) =>
      emit('extension-failed', { name, fencingToken, error, expiresAt }),
  };
  const inspector = new Inspector(
    drivers.map((d, i) => ({
      label: options.nodes?.[i] === undefined ? 'redis' : safeUrl(options.nodes[i]),
      driver: d,
    })),
    options.prefix,
  );
  const connections = new Connections({
    drivers,
    notifications: options.notifications,
    onDisconnect: options.onDisconnect,
    dispatcher,
    engine,
    quorum,
    emit,
    closing,
  });
  return { engine, connections, inspector, dispatcher, renewer, giveBacks, quorum };
}

/** A node's URL without its credentials, to show in inspections. */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'redis';
  }
}
