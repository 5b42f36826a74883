import type { QueryResult } from 'pg';
import type { Query } from './calls.ts';
import type { Row } from './codec.ts';
import type { PgNames } from './names.ts';
import { type Host, MissingKeys, runOverRows, type ScratchRun, UncountedChannels } from './scratch.ts';
import { countSubscribers, lockAndRead, lockId, openAndRead, parseRows, writeAndCommit } from './sql.ts';

/** What one call's transaction needs beside its connection. */
export interface TransactionCall<T> {
  names: PgNames;
  /** lock_timeout and the idle-in-transaction bound (sql.ts, openAndRead). */
  timeout: number;
  /** The keys it declares: locked and read as the transaction opens. */
  keys: readonly string[];
  body: (host: Host) => T;
  statuses: boolean;
  writer: string;
  /** A grant's subscriber is assumed present, and checked at commit (driver.ts, #run). */
  assume: boolean;
}

export interface Transacted<T> {
  run: ScratchRun<T>;
  /** Every key read, null for an absent one, as it was before the run. */
  loaded: ReadonlyMap<string, Row | null>;
  /** The server's clock the run saw, µs. */
  now: number;
}

function maxOf(ids: readonly bigint[]): bigint {
  let max = ids[0] ?? 0n;
  for (const id of ids) if (id > max) max = id;
  return max;
}

/**
 * One call as one transaction: BEGIN, the advisory locks of its keys in ascending id order, its
 * rows and the clock (one round trip); the run over them; the writes and COMMIT (one more).
 *
 * A script may name keys it did not declare (a fair lock's release writes the next waiter's
 * turn key). Locking them then, after the declared ones, could deadlock with a call that declared
 * them and waits for ours (PostgreSQL finds that only after deadlock_timeout, a second): so they
 * are locked in place only when every one sorts above every lock held, which keeps the one global
 * order; otherwise the transaction starts over, in the same round trip as its ROLLBACK, with
 * them declared too.
 */
export async function transact<T>(query: Query, call: TransactionCall<T>): Promise<Transacted<T>> {
  const { names } = call;
  let wanted = [...new Set(call.keys)];
  for (let restart = false; ; restart = true) {
    const loaded = new Map<string, Row | null>();
    const load = (result: QueryResult | undefined, asked: readonly string[]): void => {
      for (const key of asked) loaded.set(key, null);
      for (const found of parseRows(result?.rows ?? [])) loaded.set(found.key, found);
    };
    const opened = await query(`${restart ? 'ROLLBACK;\n' : ''}${openAndRead(names, wanted, call.timeout)}`);
    // [ROLLBACK;] BEGIN; the locks and the clock; the rows (when there are keys).
    const at = restart ? 1 : 0;
    const now = Number((opened[at + 1]?.rows[0] as { now?: string } | undefined)?.now);
    if (!Number.isFinite(now)) throw new Error('ERR PostgreSQL sent no clock reading');
    load(wanted.length === 0 ? undefined : opened[at + 2], wanted);
    let highest = wanted.length === 0 ? undefined : maxOf(wanted.map((key) => lockId(names, key)));
    const reached = new Map<string, number>();
    let run: ScratchRun<T> | undefined;
    let more: string[] | undefined;
    while (run === undefined && more === undefined) {
      try {
        run = runOverRows(loaded, now, call.body, call.statuses, reached, call.assume);
      } catch (error) {
        if (error instanceof MissingKeys) {
          const ids = error.keys.map((key) => lockId(names, key));
          if (highest !== undefined && ids.some((id) => id <= highest!)) more = error.keys;
          else {
            load((await query(lockAndRead(names, error.keys)))[1], error.keys);
            highest = maxOf(ids);
          }
        } else if (error instanceof UncountedChannels) {
          const row = (await query(countSubscribers(names, error.channels)))[0]?.rows[0] as Record<
            string,
            boolean
          >;
          for (const [i, channel] of error.channels.entries())
            reached.set(channel, row?.[`c${i}`] === true ? 1 : 0);
        } else throw error;
      }
    }
    if (run === undefined) {
      wanted = [...new Set([...loaded.keys(), ...(more ?? [])])];
      continue;
    }
    const changed = [...run.upserts.map((row) => row.key), ...run.deletes];
    await query(
      writeAndCommit(names, {
        upserts: run.upserts,
        deletes: run.deletes,
        changed,
        published: run.published,
        assumed: run.assumed,
        durable: run.durable,
        writer: call.writer,
      }),
    );
    return { run, loaded, now };
  }
}
