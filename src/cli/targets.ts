import { redact } from '../base/redact.ts';
import { ClusterDriver } from '../driver/cluster.ts';
import { createNodeDriver } from '../driver/node-driver.ts';
import { SentinelDriver } from '../driver/sentinel.ts';
import { subscriberFor } from '../driver/subscriber.ts';
import {
  type Driver,
  type DriverHandlers,
  type NodeDriverOptions,
  packageOf,
  type TrackingProof,
} from '../driver/types.ts';
import { Inspector } from '../inspect/inspector.ts';
import type { Primitive } from '../inspect/key-names.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { type Connection, openDriver, redisFailure, refusedAccess } from './common.ts';
import { CliError, EXIT } from './exit.ts';
import { describeTarget } from './topology.ts';

/** What the view and inspection read through: each driver, and the label of its node. */
export interface Targets {
  drivers: Driver[];
  labels: string[];
}

/**
 * Opens the drivers a command reads through (no Leasehold instance): one for one Redis, a
 * Cluster or a Sentinel master; one per node of a quorum. `bcast` (top, the dashboard) tracks
 * those prefixes on every master. Every one must answer within `timeout`.
 */
export async function openTargets(
  conn: Connection,
  tracking: boolean,
  extra: Pick<NodeDriverOptions, 'bcast' | 'canaryKey'> & { handlers?: DriverHandlers } = {},
  timeout = 5_000,
): Promise<Targets> {
  const t = conn.topology;
  // One Redis: as every command always opened it (its messages and hints).
  if (t.kind === 'redis' || t.kind === 'postgres')
    return { drivers: [await openDriver(conn, tracking, extra, timeout)], labels: ['redis'] };
  const { handlers, bcast, canaryKey } = extra;
  // The client package loads before the clock starts (see openDriver).
  await import(packageOf(conn.driver)).catch(() => {});
  const node = (url: string, track: boolean, key?: () => string): Driver =>
    createNodeDriver(conn.driver, {
      url,
      tracking: track,
      tls: conn.tls,
      ...(key === undefined ? {} : { canaryKey: key }),
      ...(track && bcast !== undefined ? { bcast } : {}),
    });
  let drivers: Driver[];
  let labels: string[] = ['redis'];
  if (t.kind === 'cluster') {
    drivers = [new ClusterDriver({ rootNodes: t.rootNodes, tracking, factory: node, prefix: conn.prefix })];
  } else if (t.kind === 'sentinel') {
    const subscribe = subscriberFor(conn.driver);
    drivers = [
      new SentinelDriver({
        name: t.name,
        sentinels: t.sentinels,
        tracking,
        factory: node,
        subscribe,
        durability: undefined,
        ...(canaryKey === undefined ? {} : { canaryKey }),
      }),
    ];
  } else {
    drivers = t.urls.map((url) => node(url, tracking, canaryKey));
    labels = t.urls.map(redact);
  }
  if (handlers !== undefined) for (const driver of drivers) driver.setHandlers(handlers);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.all(drivers.map((driver) => driver.connect())),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout);
      }),
    ]);
  } catch (error) {
    await Promise.all(drivers.map((driver) => driver.close().catch(() => {})));
    const message = (error as Error).message;
    throw new CliError(
      `could not connect to ${describeTarget(conn)}: ${message}`,
      refusedAccess(message) ? EXIT.noPermission : EXIT.unavailable,
    );
  } finally {
    clearTimeout(timer);
  }
  return { drivers, labels };
}

/** A command that reads one Redis only refuses a topology instead of ignoring it. */
export function oneRedisOnly(conn: Connection, command: string): void {
  if (conn.topology.kind !== 'redis' && !(conn.topology.kind === 'postgres' && command !== 'doctor')) {
    const instead =
      conn.topology.kind === 'postgres'
        ? ' (`leasehold status --postgres <url>` shows its notifications)'
        : '';
    throw new CliError(
      `${command} takes one Redis (--redis or $REDIS_URL), not --${conn.topology.kind}${instead}`,
    );
  }
}

/**
 * The notification mode a set of drivers gives: the first failed proof (a quorum waits on every
 * node, so the weakest decides), else the first; undefined while any proof is still to come.
 */
export function weakestProof(drivers: readonly Driver[]): TrackingProof | undefined {
  const proofs = drivers.map((driver) => driver.proof);
  if (proofs.length === 0 || proofs.some((proof) => proof === undefined)) return undefined;
  return proofs.find((proof) => proof?.ok !== true) ?? proofs[0];
}

/**
 * `primitives` of `name` as lh.inspect() reads each, through the targets a command opened, read
 * at once (their scripts pipelined, not one round trip after the other); a failure is reported
 * for the first primitive in order that failed.
 */
export async function readPrimitives(
  { drivers, labels }: Targets,
  prefix: string,
  name: string,
  primitives: readonly Primitive[],
): Promise<Inspection[]> {
  const inspector = new Inspector(
    drivers.map((driver, i) => ({ label: labels[i] ?? 'redis', driver })),
    prefix,
  );
  const read = await Promise.allSettled(
    primitives.map((primitive) => inspector.inspect(name, { primitive })),
  );
  const found: Inspection[] = [];
  for (const [i, result] of read.entries()) {
    if (result.status === 'rejected') redisFailure(result.reason, `reading the ${primitives[i]} "${name}"`);
    if (result.value !== undefined) found.push(result.value);
  }
  return found;
}
