// A PostgreSQL database of a test's own on the machine's server (127.0.0.1:5432 on this
// project's machine kind; LEASEHOLD_TEST_POSTGRES_URL names another server's maintenance
// database). Each file creates its database with a fresh name and drops it when done, so that
// files never see each other's rows and nothing is left behind.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The maintenance database the tests connect to in order to create and drop their own. */
export const ADMIN_URL =
  process.env.LEASEHOLD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export class PgDatabase {
  readonly name: string;
  readonly url: string;

  private constructor(name: string) {
    this.name = name;
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;
    this.url = url.toString();
  }

  /** Creates a database named `leasehold_test_<random>`. */
  static async create(): Promise<PgDatabase> {
    const db = new PgDatabase(`leasehold_test_${randomBytes(6).toString('hex')}`);
    await admin(`CREATE DATABASE "${db.name}"`);
    return db;
  }

  /** One statement on this database, on a connection of its own. */
  async sql(text: string): Promise<pg.QueryResult> {
    const client = new pg.Client({ connectionString: this.url });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  }

  /** Drops the database, cutting whatever connections are still open to it. */
  async drop(): Promise<void> {
    await admin(`DROP DATABASE IF EXISTS "${this.name}" WITH (FORCE)`);
  }
}

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `no PostgreSQL at ${ADMIN_URL} for the PostgreSQL suites (${String(error)}): start one, or set LEASEHOLD_TEST_POSTGRES_URL to a maintenance database the tests may create databases from`,
      { cause: error },
    );
  }
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
