import { parseArgs } from 'node:util';
import { redact } from '../base/redact.ts';
import { checkConnectOptions } from '../options/index.ts';
import { withConnection } from '../postgres/calls.ts';
import { pgNames } from '../postgres/names.ts';
import { migrationStatements, migrate as runMigration } from '../postgres/schema.ts';
import { printJson, usage } from './common.ts';
import { CliError, EXIT } from './exit.ts';

const migrateHelp = `Usage: leasehold migrate --postgres <url> [--schema <name>] [--table <name>] [--print]

Creates what leasehold keeps in PostgreSQL (docs/postgres.md): the schema when missing, one
table and its index. Safe to run again and from several places at once. Leasehold.connect()
does the same on first use unless postgres.migrate is false: run this instead where the
application's role may not create tables. Needs CREATE on the database (for a new schema) or
on the schema; no superuser.

Options:
  --postgres <url>    the primary: postgres://user@host:5432/db (PGPASSWORD keeps a password out of ps)
  --schema <name>     default: leasehold
  --table <name>      default: leasehold_keys
  --print             print the SQL instead of running it (for a DBA or a migration tool)
  --json              machine-readable output (JSON)
  -h, --help          show this help
`;

/** `leasehold migrate`: the schema and table of a PostgreSQL deployment. */
export async function migrate(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      postgres: { type: 'string' },
      schema: { type: 'string' },
      table: { type: 'string' },
      print: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(migrateHelp);
    return EXIT.ok;
  }
  const url = values.postgres;
  if (url === undefined) throw new CliError('--postgres <url> is required (see --help)');
  const valid = usage(() =>
    checkConnectOptions({ postgres: { url, schema: values.schema, table: values.table } }),
  ).postgres!;
  const names = pgNames(valid.schema, valid.table);
  if (values.print) {
    process.stdout.write(`${migrationStatements(names, true).join(';\n')};\n`);
    return EXIT.ok;
  }
  const pg = (await import('pg').catch(() => {
    throw new CliError('the "pg" package (node-postgres) is not installed: npm install pg', EXIT.unavailable);
  })) as typeof import('pg') & { default?: typeof import('pg') };
  const pool = new (pg.default ?? pg).Pool({
    connectionString: url,
    max: 1,
    connectionTimeoutMillis: 10_000,
  });
  pool.on('error', () => {});
  try {
    const done = await withConnection(
      pool,
      30_000,
      (query) => runMigration(query, names),
      () => {},
    );
    if (values.json)
      printJson({ table: `${names.schema}.${names.table}`, created: done.created, server: done.version });
    else {
      process.stdout.write(
        done.created
          ? `created ${names.schema}.${names.table} on PostgreSQL ${done.version} at ${redact(url)}\n`
          : `${names.schema}.${names.table} is already there (PostgreSQL ${done.version} at ${redact(url)})\n`,
      );
    }
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CliError) throw error;
    const message = (error as Error).message;
    const refused = /permission denied|password authentication failed|no pg_hba/i.test(message);
    throw new CliError(
      `could not migrate PostgreSQL at ${redact(url)}: ${message}`,
      refused ? EXIT.noPermission : EXIT.unavailable,
    );
  } finally {
    await pool.end().catch(() => {});
  }
}
