import type { Query } from './calls.ts';
import { commandKeys } from './keys.ts';
import { literal, type PgNames } from './names.ts';
import { scanKeys } from './scan.ts';
import type { Host } from './scratch.ts';
import { changePayloads } from './sql.ts';

/** What a plain command needs of the driver. */
export interface CommandHost {
  with<T>(work: (query: Query) => Promise<T>): Promise<T>;
  /** Runs `body` as a one-command script over `keys`' rows, in one transaction. */
  run(keys: readonly string[], body: (host: Host) => unknown): Promise<unknown>;
  names: PgNames;
  /** This driver's writer id: its own notifications are skipped when they come back. */
  writer: string;
  version: string;
}

/**
 * A plain command: the ones the scripts use run as a one-command script over their key's row;
 * PING, TIME, INFO, SCAN and FLUSHALL (the table only) are answered by SQL.
 */
export async function plainCommand(args: readonly string[], on: CommandHost): Promise<unknown> {
  const name = (args[0] ?? '').toUpperCase();
  switch (name) {
    case 'PING':
      await on.with((query) => query('SELECT 1'));
      return 'PONG';
    case 'TIME': {
      const [result] = await on.with((query) =>
        query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS now'),
      );
      const micros = BigInt((result?.rows[0] as { now?: string } | undefined)?.now ?? '0');
      return [String(micros / 1_000_000n), String(micros % 1_000_000n)];
    }
    case 'INFO':
      return `# Server\r\nserver_name:postgresql\r\npostgresql_version:${on.version}\r\n`;
    case 'SCAN':
      return on.with((query) => scanKeys(query, on.names, args));
    case 'FLUSHALL':
    case 'FLUSHDB':
      await on.with((query) =>
        query(
          `BEGIN; DELETE FROM ${on.names.qualified}; ` +
            `SELECT pg_notify(${literal(on.names.channel)}, ${literal(changePayloads(on.writer, null)[0]!)}); COMMIT`,
        ),
      );
      return 'OK';
    default:
      return on.run(commandKeys(args), (host) => host([...args]));
  }
}
