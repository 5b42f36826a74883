// What only the PostgreSQL backend has (docs/postgres.md): its options, the table it creates or
// refuses to, a pool of the user's own, and the sweep of rows whose TTL ran out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { isFenceMark } from '../../src/base/fence-mark.ts';
import { ConnectError, Leasehold } from '../../src/index.ts';
import { uniquePrefix } from '../harness/leasehold.ts';
import { PgDatabase } from '../harness/postgres.ts';

describe('postgres backend specifics', () => {
  let db: PgDatabase;
  before(async () => {
    db = await PgDatabase.create();
  });
  after(async () => {
    await db.drop();
  });

  test('options: a TypeError names what was wrong', async () => {
    await assert.rejects(
      Leasehold.connect({ postgres: 'mysql://x' }),
      /option "postgres" must be a postgres:\/\//,
    );
    await assert.rejects(
      Leasehold.connect({ postgres: db.url, url: 'redis://127.0.0.1:6379' }),
      (e: unknown) => e instanceof TypeError && /"url" must be left out with PostgreSQL/.test(e.message),
    );
    await assert.rejects(
      Leasehold.connect({ postgres: { url: db.url, schema: 'bad-name' } }),
      (e: unknown) => e instanceof TypeError && /postgres\.schema/.test(e.message),
    );
    await assert.rejects(
      Leasehold.connect({ postgres: { url: db.url, extra: 1 } as never }),
      (e: unknown) => e instanceof TypeError && /extra/.test(e.message),
    );
  });

  test('migrate: false fails with a hint when the table is missing; the default creates it', async () => {
    const schema = 'not_yet';
    await assert.rejects(
      Leasehold.connect({ postgres: { url: db.url, schema, migrate: false } }),
      (e: unknown) => e instanceof ConnectError && /leasehold migrate/.test(e.message),
    );
    const lh = await Leasehold.connect({ postgres: { url: db.url, schema } });
    await lh.close();
    const found = await db.sql(`SELECT to_regclass('"${schema}"."leasehold_keys"') IS NOT NULL AS ok`);
    assert.equal(found.rows[0].ok, true);
  });

  test("a pool of the user's own, given as postgres.pool or as client, is used and left open", async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    try {
      for (const options of [{ postgres: { pool } }, { client: pool }]) {
        const lh = await Leasehold.connect({ ...options, prefix: uniquePrefix('pool') });
        assert.equal(lh.stats.driver, 'postgres');
        const lease = await lh.acquire('job');
        await lease.release();
        await lh.close();
        assert.equal((await pool.query('SELECT 1 AS one')).rows[0].one, 1, 'the pool is still open');
      }
    } finally {
      await pool.end();
    }
  });

  test('expired rows nobody touches are swept (here: by close(), as a short-lived process does); close() leaves no lease row', async () => {
    const lh0 = await Leasehold.connect({ postgres: db.url });
    await lh0.close();
    await db.sql(
      "INSERT INTO leasehold.leasehold_keys VALUES ('stale:1', 'string', 'x', 1), ('stale:2', 'string', 'x', NULL)",
    );
    const prefix = uniquePrefix('sweep');
    const lh = await Leasehold.connect({ postgres: db.url, prefix });
    const lease = await lh.acquire('job');
    await lease.release();
    await lh.close();
    const stale = (
      await db.sql("SELECT key FROM leasehold.leasehold_keys WHERE key LIKE 'stale:%' ORDER BY key")
    ).rows;
    assert.deepEqual(
      stale.map((r) => r.key),
      ['stale:2'],
      'the expired row is gone, the one without a TTL stays',
    );
    const left = (
      await db.sql(`SELECT key FROM leasehold.leasehold_keys WHERE key LIKE '${prefix}:%'`)
    ).rows.map((r) => r.key as string);
    assert.ok(
      left.every((key) => key.endsWith(':fence') || isFenceMark(key)),
      `only the fencing counter and its fence mark stay after close: ${left.join(', ')}`,
    );
  });
});
