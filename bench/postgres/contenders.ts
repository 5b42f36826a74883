// The PostgreSQL contenders of bench/postgres.ts: leasehold on PostgreSQL, and the two ways Node
// teams lock with PostgreSQL alone, each as its users run it.
import pg from 'pg';
import type { Lease, Leasehold } from '../../src/index.ts';

/** One lock held. `signal` aborts when the holder learns that it lost it. */
export interface PgHeld {
  readonly signal: AbortSignal;
  release(): Promise<void>;
  /** The server process whose session holds it (session locks: what a takeover terminates). */
  readonly backend?: number;
}

export interface PgClient {
  acquire(name: string): Promise<PgHeld>;
  close(): Promise<void>;
}

export interface PgContender {
  readonly id: string;
  readonly label: string;
  /** How a waiter waits, how a holder learns of loss, what a takeover is. */
  readonly how: string;
  connect(url: string): Promise<PgClient>;
}

/** A lease's validity, and the TTL the TTL-less contenders do not have. */
export const TTL = 10_000;

/** leasehold on PostgreSQL, default settings (notifications: LISTEN/NOTIFY). */
export const leaseholdPg: PgContender = {
  id: 'leasehold-postgres',
  label: 'leasehold (PostgreSQL)',
  how: 'waits for a NOTIFY; a lease aborts on the NOTIFY of its row changing; takeover: forceAcquire',
  async connect(url) {
    const { Leasehold } = await import('../../src/index.ts');
    const lh: Leasehold = await Leasehold.connect({ postgres: url, ttl: TTL });
    return {
      async acquire(name) {
        const lease: Lease = await lh.acquire(name, { timeout: 60_000 });
        return {
          signal: lease.signal,
          release: async () => {
            await lease.release();
          },
        };
      },
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
export const advisorySession: PgContender = {
  id: 'pg-advisory-session',
  label: 'pg_advisory_lock (session, blocking)',
  how: 'blocks in pg_advisory_lock on its own connection; loss: the connection errors; takeover: pg_terminate_backend',
  connect: (url) => advisory(url, undefined),
};

/** The poll interval of the polling contender: what a demanding user would pick (not 100 ms). */
export const POLL_MS = 5;

/** `pg_try_advisory_lock` every POLL_MS ms: the plain baseline. */
export const advisoryPoll: PgContender = {
  id: 'pg-advisory-poll',
  label: `pg_try_advisory_lock (polled every ${POLL_MS} ms)`,
  how: `pg_try_advisory_lock every ${POLL_MS} ms on its own connection; loss and takeover as the session lock`,
  connect: (url) => advisory(url, POLL_MS),
};

async function advisory(url: string, poll: number | undefined): Promise<PgClient> {
  const pool = new pg.Pool({ connectionString: url, max: 40 });
  pool.on('error', () => {});
  return {
    async acquire(name) {
      const client = await pool.connect();
      const lost = new AbortController();
      const onError = (error: Error) => lost.abort(error);
      client.on('error', onError);
      try {
        const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
        if (poll === undefined) await client.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
        else {
          for (;;) {
            const got = await client.query('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [name]);
            if (got.rows[0].ok === true) break;
            await new Promise((resolve) => setTimeout(resolve, poll));
          }
        }
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
        client.off('error', onError);
        client.release(true);
        throw error;
      }
    },
    close: () => pool.end(),
  };
}

export const CONTENDERS: readonly PgContender[] = [leaseholdPg, advisorySession, advisoryPoll];
