// The conformance suites on PostgreSQL (docs/postgres.md): the same behaviour as on Redis and the
// memory backend, in tracking mode (LISTEN/NOTIFY) and in polling mode.
import type { ConnectOptions } from '../../src/index.ts';
import { Leasehold } from '../../src/index.ts';
import { PostgresDriver } from '../../src/postgres/driver.ts';
import { pgNames } from '../../src/postgres/names.ts';
import { multiLockConformance, oneStore } from '../conformance/multilock.conformance.ts';
import { type ConformanceTarget, mutexConformance } from '../conformance/mutex.conformance.ts';
import { primitivesConformance } from '../conformance/primitives.conformance.ts';
import { PgDatabase } from '../harness/postgres.ts';

/** A fresh database; `extra` options (polling) for every instance connected to it. */
export async function postgresTarget(extra: ConnectOptions = {}): Promise<ConformanceTarget> {
  const db = await PgDatabase.create();
  // Another connection to the store, as another program would have one.
  const raw = new PostgresDriver({
    url: db.url,
    names: pgNames('leasehold', 'leasehold_keys'),
    migrate: true,
    tracking: false,
    commandTimeout: 5_000,
    canaryKey: () => 'unused',
  });
  await raw.connect();
  return {
    connect: (options) => Leasehold.connect({ ...options, postgres: db.url, ...extra }),
    del: async (key) => {
      await raw.command(['DEL', key]);
    },
    setWithTtl: async (key, value, ttl) => {
      await raw.command(['SET', key, value, 'PX', String(ttl)]);
    },
    command: (args) => raw.command(args.map(String)),
    close: async () => {
      await raw.close();
      await db.drop();
    },
  };
}

const polling: ConnectOptions = { notifications: 'polling', retryDelay: 20 };

mutexConformance('postgres', () => postgresTarget());
mutexConformance('postgres (polling)', () => postgresTarget(polling));
primitivesConformance('postgres', () => postgresTarget());
primitivesConformance('postgres (polling)', () => postgresTarget(polling));
multiLockConformance('postgres', async () => oneStore(await postgresTarget()));
multiLockConformance('postgres (polling)', async () => oneStore(await postgresTarget(polling)));
