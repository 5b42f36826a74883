import { redact } from '../base/redact.ts';
import { after } from '../base/timer.ts';
import { defaultCanaryKey } from '../driver/canary.ts';
import { createNodeDriver } from '../driver/node-driver.ts';
import { type Driver, packageOf } from '../driver/types.ts';
import { ConnectError } from '../errors.ts';
import { MemoryDriver } from '../memory/driver.ts';
import type { ValidConnectOptions } from '../options/index.ts';
import { PostgresDriver } from '../postgres/driver.ts';
import { pgNames } from '../postgres/names.ts';
import { topologyDriver, topologyTarget } from './topology-driver.ts';

/** The drivers an instance talks through: one, or one per node in quorum mode. */
export function createDrivers(valid: ValidConnectOptions): Driver[] {
  const tracking = valid.notifications !== 'polling';
  if (valid.memory !== undefined) {
    return [valid.memory.driver(tracking) ?? new MemoryDriver(valid.memory, tracking)];
  }
  const canaryKey = defaultCanaryKey(valid.prefix);
  const pg = valid.postgres;
  if (pg !== undefined) {
    const driver = new PostgresDriver({
      url: pg.url,
      pool: pg.pool as import('pg').Pool | undefined,
      listenUrl: pg.listenUrl,
      names: pgNames(pg.schema, pg.table),
      migrate: pg.migrate,
      tracking,
      commandTimeout: valid.commandTimeout,
      canaryKey,
    });
    return [driver];
  }
  const make = (url: string, client?: unknown): Driver => {
    const options = {
      url,
      tracking,
      canaryKey,
      commandTimeout: valid.commandTimeout,
      tls: valid.tls,
      ...(client === undefined ? {} : { client }),
    };
    return createNodeDriver(valid.driver, options);
  };
  if (valid.nodes !== undefined) return valid.nodes.map((url) => make(url));
  const replicated = topologyDriver(valid); // cluster / sentinel
  if (replicated !== undefined) return [replicated];
  return [make(valid.url, valid.client)];
}

/**
 * Connects every driver within `connectTimeout`. One Redis must answer; in quorum mode a
 * majority must, and the others keep connecting in the background (their commands fail until
 * then, which a majority tolerates). On failure every driver is closed.
 */
export async function connectDrivers(drivers: readonly Driver[], valid: ValidConnectOptions): Promise<void> {
  await loadClientPackage(valid);
  const needed = drivers.length === 1 ? 1 : Math.floor(drivers.length / 2) + 1;
  let cancelTimer: (() => void) | undefined;
  // after(): connectTimeout may be Infinity or beyond setTimeout's 2^31-1 ms.
  const deadline = new Promise<'timeout'>((resolve) => {
    cancelTimer = after(valid.connectTimeout, () => resolve('timeout'), { ref: true });
  });
  const errors: unknown[] = [];
  let connected = 0;
  const enough = new Promise<'ok' | 'failed'>((resolve) => {
    for (const driver of drivers) {
      driver.connect().then(
        () => {
          connected += 1;
          if (connected >= needed) resolve('ok');
        },
        (error: unknown) => {
          errors.push(error);
          if (errors.length > drivers.length - needed) resolve('failed');
        },
      );
    }
  });
  const outcome = await Promise.race([enough, deadline]).finally(() => cancelTimer?.());
  if (outcome === 'ok') return;
  await Promise.all(drivers.map((driver) => driver.close().catch(() => {})));
  const typeError = errors.find((e) => e instanceof TypeError);
  if (typeError !== undefined) throw typeError;
  const where =
    postgresTarget(valid) ??
    topologyTarget(valid) ??
    (valid.nodes !== undefined
      ? `${needed} of ${drivers.length} nodes (${valid.nodes.map(redact).join(', ')})`
      : valid.client === undefined
        ? redact(valid.url)
        : 'the client passed in "client"');
  const first = errors[0];
  const why =
    outcome === 'timeout'
      ? `no answer within ${valid.connectTimeout} ms${first === undefined ? '' : ` (last error: ${reason(first)})`}`
      : reason(first);
  const server = valid.postgres === undefined ? 'Redis' : 'PostgreSQL';
  throw new ConnectError(`could not connect to ${server} at ${where}: ${why}`, { cause: first });
}

/**
 * Loads the client package before connectTimeout starts counting: loading modules is not the
 * server's answer, and a process starved of CPU (a busy host, CI) took seconds over it, which
 * connect() reported as "no answer within 5000 ms". A missing package is reported by the
 * driver's own connect, which imports it again.
 */
async function loadClientPackage(valid: ValidConnectOptions): Promise<void> {
  if (valid.memory !== undefined) return;
  const name = valid.postgres !== undefined ? 'pg' : packageOf(valid.driver);
  await import(name).catch(() => {});
}

/** Where a PostgreSQL deployment lives, for connect errors (password redacted). */
function postgresTarget(valid: ValidConnectOptions): string | undefined {
  const pg = valid.postgres;
  if (pg === undefined) return undefined;
  return pg.url === undefined ? 'the pool passed in "postgres"' : redact(pg.url);
}

/** An error's own words: "connect ECONNREFUSED 127.0.0.1:1", "WRONGPASS invalid username-password pair". */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const aggregate = (error as { errors?: unknown[] }).errors;
  if (error.message === '' && Array.isArray(aggregate) && aggregate[0] instanceof Error)
    return aggregate[0].message;
  return error.message;
}
