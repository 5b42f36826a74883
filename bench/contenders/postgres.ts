// The PostgreSQL contenders of the postgres scenario: leasehold on PostgreSQL, and the two ways
// Node teams lock with PostgreSQL alone, each as its users run it. They are contenders like the
// Redis ones (a worker runs them by id), but only that scenario uses them.
import pg from 'pg';
import { held, load } from './leasehold.ts';
import type { Contender, ContenderClient, ContenderInfo, Held } from './types.ts';
import { ownVersion, packageVersion } from './util.ts';

/** A held session lock: the server process whose session holds it is what a takeover terminates. */
export interface SessionHeld extends Held {
  readonly backend: number;
}

/** The poll interval of the polling contender: what a demanding user would pick (not 100 ms). */
export const POLL_MS = 5;

const info =
  (id: string, label: string, library: string, waiting: string, lossSignal: string) =>
  async (): Promise<ContenderInfo> => ({
    id,
    label,
    library,
    version: library === 'leasehold' ? ownVersion() : packageVersion('pg'),
    client: 'pg',
    clientVersion: packageVersion('pg'),
    api: label,
    lossSignal,
    waiting,
    settings: {},
  });

/** leasehold on PostgreSQL, default settings (notifications: LISTEN/NOTIFY). */
export const leaseholdPg: Contender = {
  id: 'leasehold-postgres',
  scenarios: ['postgres'],
  info: info(
    'leasehold-postgres',
    'leasehold (PostgreSQL)',
    'leasehold',
    'waits for a NOTIFY (a direct grant or its row changing); no polling',
    'lease.signal (the NOTIFY of its row changing); takeover: forceAcquire',
  ),
  async connect(url) {
    const { Leasehold } = await load('current');
    const lh = await Leasehold.connect({ postgres: url });
    return {
      acquire: async (name, { ttl, signal }) =>
        held(await lh.acquire(name, { ttl, ...(signal ? { signal } : {}) })),
      forceAcquire: async (name, ttl) => held(await lh.forceAcquire(name, { ttl })),
      close: () => lh.close(),
    };
  },
};

/**
 * A session advisory lock, `pg_advisory_lock(hashtext(name))`, on a connection checked out of a
 * pool for as long as it is held: the server wakes a waiter the moment the lock is unlocked. No
 * TTL (a holder that hangs holds it until its connection dies) and no fencing token; the holder
 * learns of a takeover (pg_terminate_backend) from its connection's error.
 */
export const advisorySession: Contender = {
  id: 'pg-advisory-session',
  scenarios: ['postgres'],
  info: info(
    'pg-advisory-session',
    'pg_advisory_lock (session, blocking)',
    'pg',
    'blocks in pg_advisory_lock on its own connection',
    'the connection errors; takeover: pg_terminate_backend',
  ),
  connect: (url) => advisory(url, undefined),
};

/** `pg_try_advisory_lock` every POLL_MS ms: the plain baseline. */
export const advisoryPoll: Contender = {
  id: 'pg-advisory-poll',
  scenarios: ['postgres'],
  info: info(
    'pg-advisory-poll',
    `pg_try_advisory_lock (polled every ${POLL_MS} ms)`,
    'pg',
    `pg_try_advisory_lock every ${POLL_MS} ms on its own connection`,
    'as the session lock',
  ),
  connect: (url) => advisory(url, POLL_MS),
};

async function advisory(url: string, poll: number | undefined): Promise<ContenderClient> {
  const pool = new pg.Pool({ connectionString: url, max: 40 });
  pool.on('error', () => {});
  return {
    async acquire(name, { signal }): Promise<SessionHeld> {
      const client = await pool.connect();
      const lost = new AbortController();
      const onError = (error: Error) => lost.abort(error);
      client.on('error', onError);
      // A waiter given up on (the idle window's end): its connection is dropped, which ends the wait.
      const abandon = () => client.release(true);
      signal?.addEventListener('abort', abandon, { once: true });
      try {
        const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
        if (poll === undefined) await client.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
        else {
          for (;;) {
            signal?.throwIfAborted();
            const got = await client.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [name]);
            if (got.rows[0].ok === true) break;
            await new Promise((resolve) => setTimeout(resolve, poll));
          }
        }
        signal?.removeEventListener('abort', abandon);
        return {
          signal: lost.signal,
          backend: pid,
          release: async () => {
            try {
              if (!lost.signal.aborted) await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
            } finally {
              client.off('error', onError);
              client.release(lost.signal.aborted ? true : undefined);
            }
          },
        };
      } catch (error) {
        signal?.removeEventListener('abort', abandon);
        client.off('error', onError);
        if (!signal?.aborted) client.release(true);
        throw error;
      }
    },
    close: () => pool.end(),
  };
}

export const pgContenders: readonly Contender[] = [leaseholdPg, advisorySession, advisoryPoll];
