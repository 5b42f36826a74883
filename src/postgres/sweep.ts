import { monotonic } from '../base/clock.ts';
import type { Query } from './calls.ts';

/** The sweep of expired rows: at most once a minute, by an instance that wrote, a bounded batch. */
const SWEEP_EVERY = 60_000;
const SWEEP_BATCH = 500;

/**
 * Deletes rows whose TTL ran out (reads already treat them as absent; this bounds the table). An
 * instance sweeps once a minute while it writes, and once at close (a short-lived process too).
 */
export class Sweeper {
  readonly #with: <T>(work: (query: Query) => Promise<T>) => Promise<T>;
  readonly #table: () => string;
  #last = monotonic();
  /** This instance wrote since it started: close() sweeps once. */
  wrote = false;

  constructor(run: <T>(work: (query: Query) => Promise<T>) => Promise<T>, table: () => string) {
    this.#with = run;
    this.#table = table;
  }

  /** A transaction wrote: sweep if the last sweep is a minute old. */
  written(): void {
    this.wrote = true;
    if (monotonic() - this.#last < SWEEP_EVERY) return;
    this.#last = monotonic();
    void this.sweep().catch(() => {});
  }

  /** One bounded DELETE of rows whose TTL ran out (expire_at re-checked on the row it deletes). */
  sweep(): Promise<unknown> {
    const table = this.#table();
    const now = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint';
    return this.#with((query) =>
      query(
        `DELETE FROM ${table} WHERE expire_at < ${now} AND key IN ` +
          `(SELECT key FROM ${table} WHERE expire_at < ${now} LIMIT ${SWEEP_BATCH})`,
      ),
    );
  }
}
