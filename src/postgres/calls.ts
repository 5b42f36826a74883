import type { Pool, PoolClient, QueryResult } from 'pg';
import { monotonic } from '../base/clock.ts';
import { after } from '../base/timer.ts';
import { missingPackage } from '../driver/connect-errors.ts';
import { asError } from '../driver/types.ts';

/** Runs the batches of one transaction. Each resolves with every statement's result, in order. */
export type Query = (text: string) => Promise<QueryResult[]>;

/** No reply within the call's time: the connection was given up. */
export class PgStallError extends Error {
  constructor(limit: number) {
    super(`no reply from PostgreSQL within ${limit} ms (commandTimeout): the connection was dropped`);
    this.name = 'PgStallError';
  }
}

/**
 * SQLSTATE classes that say the server or the path to it failed, not the statement. 25P03 and
 * 25P04 are the server ending a session that went quiet in a transaction (idle-in-transaction
 * timeout, sql.ts) or ran past transaction_timeout: the caller stalled or its path did, and the
 * connection is gone with its transaction rolled back.
 */
const UNAVAILABLE = /^(08|53|57|58)|^25P0[34]$|^55P03$|^40P01$/;

/** An error of node-postgres or of the path to the server that leaves the connection unusable. */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof PgStallError) return true;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return UNAVAILABLE.test(code) && code !== '55P03' && code !== '40P01';
  return error instanceof Error; // ECONNRESET, "Connection terminated unexpectedly", ...
}

/**
 * Tags an outage's error as PostgreSQL's, so that the LeaseholdError made of it says "PostgreSQL
 * did not answer" (src/runners/failures.ts), not Redis.
 */
export function fromPostgres(error: Error): Error {
  return Object.assign(error, { server: 'PostgreSQL' });
}

/**
 * The server refused a statement (SQLSTATE outside the availability classes): worded as a Redis
 * error reply (`ERR ...`, `READONLY ...` for a read-only server) so that leasehold's runners report
 * it as a refusal (RedisCommandError) rather than as an outage.
 */
export function asReply(error: unknown): Error {
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e?.code !== 'string' || !/^[0-9A-Z]{5}$/.test(e.code) || UNAVAILABLE.test(e.code)) {
    return fromPostgres(error instanceof Error ? error : new Error(String(error)));
  }
  const word = e.code === '25006' ? 'READONLY' : 'ERR';
  return new Error(`${word} PostgreSQL refused it (SQLSTATE ${e.code}): ${String(e.message)}`, {
    cause: error,
  });
}

/**
 * One transaction's worth of work on a pooled connection, within `limit` ms in all (waiting for a
 * connection included): a black-holed network or a stalled server settles every call in time.
 * A connection that timed out or failed is destroyed, never handed back to the pool, and a
 * statement error rolls the transaction back before it is.
 */
export async function withConnection<T>(
  pool: Pool,
  limit: number,
  work: (query: Query) => Promise<T>,
  onStall: () => void,
): Promise<T> {
  const deadline = monotonic() + limit;
  const client = await timed(pool.connect(), limit, (late) => late.release());
  guard(client);
  let broken: Error | undefined;
  const query: Query = async (text) => {
    try {
      const result = await timed(
        client.query(text) as unknown as Promise<QueryResult | QueryResult[]>,
        deadline - monotonic(),
      );
      return Array.isArray(result) ? result : [result];
    } catch (error) {
      if (isConnectionFailure(error)) broken = error as Error;
      throw error;
    }
  };
  try {
    return await work(query);
  } catch (error) {
    if (broken === undefined) await query('ROLLBACK').catch(() => {});
    if (error instanceof PgStallError) onStall();
    throw error;
  } finally {
    if (broken !== undefined) destroy(client);
    client.release(broken);
  }
}

const guarded = new WeakSet<PoolClient>();

/**
 * A connection's socket can fail while no query is running (a reset between calls): node-postgres
 * then emits 'error' on the client, which would crash the process unheard. The pool notices the
 * dead client at its next use; nothing here needs the event.
 */
function guard(client: PoolClient): void {
  if (guarded.has(client)) return;
  guarded.add(client);
  client.on('error', () => {});
}

/**
 * destroy(): the socket of every connection the pool has, idle or in a call, cut at once. pg's
 * Pool has no public list of them (end() waits for the busy ones to come back); `_clients` has
 * held it since pg 6, and without it only the idle ones close now, the rest at commandTimeout.
 */
export function cutPool(pool: Pool): void {
  void pool.end().catch(() => {});
  const clients = (pool as unknown as { _clients?: PoolClient[] })._clients ?? [];
  for (const client of clients) destroy(client);
}

/** Cuts the socket itself: end() would wait for a peer that may never answer. */
function destroy(client: PoolClient): void {
  const stream = (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection
    ?.stream;
  stream?.destroy?.();
}

/** `promise` within `ms`, or a PgStallError; `late` gets a value that arrives after the timeout. */
export function timed<T>(promise: Promise<T>, ms: number, late?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const cancel = after(ms, () => {
      done = true;
      reject(new PgStallError(Math.round(ms)));
    });
    promise.then(
      (value) => {
        cancel();
        if (done) late?.(value);
        else resolve(value);
        done = true;
      },
      (error: unknown) => {
        cancel();
        if (!done) reject(error);
        done = true;
      },
    );
  });
}

/** The SQLSTATE of a failed call: on the error itself, or on the one asReply wrapped. */
export function sqlState(error: unknown): string | undefined {
  const e = error as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = typeof e?.code === 'string' ? e.code : e?.cause?.code;
  return typeof code === 'string' ? code : undefined;
}

export type Pg = typeof import('pg');

export async function loadPg(): Promise<Pg> {
  const module = (await import('pg').catch((error: unknown) => {
    throw new Error(missingPackage(error, 'pg') ?? asError(error).message, { cause: error });
  })) as Pg & { default?: Pg };
  return module.default ?? module;
}
