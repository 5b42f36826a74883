import { parseArgs } from 'node:util';
import { after } from '../base/timer.ts';
import type { Driver, DriverHandlers, TrackingProof } from '../driver/types.ts';
import {
  type Connection,
  connection,
  connectionHelp,
  connectionOptions,
  keysOf,
  type LockState,
  lockName,
  openDriver,
  printJson,
  readState,
  redisFailure,
  stopOnSignals,
} from './common.ts';
import { CliError, EXIT } from './exit.ts';
import { formatMs } from './values.ts';

export const releaseHelp = `Usage: leasehold release --force <name> [options]

Deletes the lock <name> whoever holds it. The holder's lease.signal aborts at once (LockLostError),
and waiters retry at once. --force is required: the CLI never holds the lease's token, so this is
always a takeover of someone else's lock.

${connectionHelp}
`;

export const watchHelp = `Usage: leasehold watch <name> [options]

Prints every change to the lock <name> as it happens (acquired, extended, released, expired,
taken over), from invalidation pushes: nothing is polled while nothing changes. Ctrl-C stops.

${connectionHelp}
`;

type Values = { redis?: string; prefix?: string; driver?: string; json?: boolean; help?: boolean };

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: connectionOptions, allowPositionals: true });
}

export async function release(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...connectionOptions, force: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (values.help) return help(releaseHelp);
  const name = lockName(positionals);
  if (values.force !== true) {
    throw new CliError(
      '--force is required (the CLI does not hold the lease; this deletes whoever holds it)',
    );
  }
  const conn = connection(values);
  const driver = await openDriver(conn, false);
  try {
    const { key } = keysOf(conn, name);
    const deleted = Number(await query(() => driver.command(['DEL', key]), `deleting ${key}`)) === 1;
    if (values.json) printJson({ name, key, released: deleted });
    else process.stdout.write(deleted ? `released "${name}" (was held)\n` : `"${name}" was not held\n`);
    return EXIT.ok;
  } finally {
    await driver.close();
  }
}

export async function watch(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values.help) return help(watchHelp);
  const name = lockName(positionals);
  const conn = connection(values);
  const watcher = new Watcher(conn, name, values);
  const signals = stopOnSignals();
  try {
    const driver = await openDriver(conn, true, { handlers: watcher.handlers });
    watcher.driver = driver;
    try {
      // The first read fails the command (a refused permission must not leave a silent watch).
      await watcher.first().catch((error: unknown) => redisFailure(error, `reading the lock "${name}"`));
      await signals.stopped;
    } finally {
      watcher.stop();
      await driver.close();
    }
    return EXIT.ok;
  } finally {
    signals.stop();
  }
}

/** How often `watch` reads when pushes are unproven. */
const POLL_MS = 1_000;

/** Re-reads the lock on every push for its key (the read re-arms tracking) and prints transitions. */
class Watcher {
  /** Set once connected; the handlers are installed before, so that the canary's verdict is heard. */
  driver: Driver | undefined;
  readonly handlers: DriverHandlers;
  readonly #conn: Connection;
  readonly #name: string;
  readonly #json: boolean;
  #last: LockState | undefined;
  #expiresAt: number | undefined;
  #cancelTimer: (() => void) | undefined;
  #reading: Promise<void> | undefined;
  #again = false;
  #poll: NodeJS.Timeout | undefined;

  constructor(conn: Connection, name: string, values: Values) {
    this.#conn = conn;
    this.#name = name;
    this.#json = values.json === true;
    const { key } = keysOf(conn, name);
    this.handlers = {
      invalidate: (keys) => {
        if (keys === null || keys.includes(key)) void this.refresh();
      },
      reset: () => void this.refresh(),
      // Before connect() has succeeded, its failure is the CLI's error message instead.
      disconnected: (error) => {
        if (this.driver !== undefined)
          this.#print('disconnected', { error: error?.message }, 'connection lost');
      },
      proven: (proof) => this.#proven(proof),
    };
  }

  /** Pushes unproven (a proxy, an ACL, another server's rules): read again every second instead. */
  #proven(proof: TrackingProof): void {
    clearInterval(this.#poll);
    this.#poll = undefined;
    if (proof.ok) return;
    this.#print(
      'polling',
      { reason: proof.reason?.message },
      `polling every ${POLL_MS} ms: ${proof.reason?.message}`,
    );
    this.#poll = setInterval(() => void this.refresh(), POLL_MS);
  }

  /** The first read, whose failure the caller reports. */
  async first(): Promise<void> {
    if (this.driver !== undefined) this.#update(await readState(this.driver, this.#conn, this.#name));
  }

  async refresh(): Promise<void> {
    if (this.#reading !== undefined) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        try {
          if (this.driver === undefined) continue;
          this.#update(await readState(this.driver, this.#conn, this.#name));
        } catch (error) {
          this.#print(
            'error',
            { error: (error as Error).message },
            `read failed: ${(error as Error).message}`,
          );
        }
      } while (this.#again);
    })();
    await this.#reading;
    this.#reading = undefined;
  }

  stop(): void {
    this.#cancelTimer?.();
    clearInterval(this.#poll);
  }

  #update(next: LockState): void {
    const prev = this.#last;
    this.#last = next;
    // A key that vanished once its TTL had run out expired; earlier, someone deleted it.
    const expired = this.#expiresAt !== undefined && Date.now() >= this.#expiresAt - 20;
    this.#expiresAt = next.held && next.ttl !== null && next.ttl >= 0 ? Date.now() + next.ttl : undefined;
    this.#cancelTimer?.();
    // Redis's own expiry push can lag by seconds: read again when the TTL should have run out.
    if (next.held && next.ttl !== null && next.ttl >= 0) {
      // after(): a TTL read from Redis may exceed setTimeout's 2^31-1 ms.
      this.#cancelTimer = after(next.ttl + 1, () => void this.refresh());
    }
    const fields = { token: next.token, owner: next.owner, ttl: next.ttl, fencingToken: next.fencingToken };
    if (prev === undefined) {
      const human = next.held
        ? `held (fencing token ${next.fencingToken}, ${formatMs(next.ttl ?? 0)} left)`
        : `free (last fencing token ${next.fencingToken})`;
      this.#print(next.held ? 'held' : 'free', fields, human);
    } else if (next.held && (!prev.held || prev.token !== next.token)) {
      const verb = prev.held ? 'taken-over' : 'acquired';
      this.#print(
        verb,
        fields,
        `${verb} (fencing token ${next.fencingToken}, ttl ${formatMs(next.ttl ?? 0)})`,
      );
    } else if (next.held) {
      this.#print('extended', fields, `extended (${formatMs(next.ttl ?? 0)} left)`);
    } else if (prev.held) {
      this.#print(expired ? 'expired' : 'released', fields, expired ? 'expired' : 'released');
    }
  }

  #print(event: string, fields: Record<string, unknown>, human: string): void {
    if (this.#json) printJson({ time: new Date().toISOString(), event, name: this.#name, ...fields });
    else process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${this.#name}  ${human}\n`);
  }
}

async function query<T>(fn: () => Promise<T>, what: string): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    return redisFailure(error, what);
  }
}

function help(text: string): number {
  process.stdout.write(text);
  return EXIT.ok;
}
