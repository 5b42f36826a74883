import { parseArgs } from 'node:util';
import type { Driver, TrackingProof } from '../driver/types.ts';
import {
  CliError,
  type Connection,
  connection,
  connectionHelp,
  connectionOptions,
  EXIT,
  formatMs,
  keysOf,
  type LockState,
  lockName,
  openDriver,
  printJson,
  readState,
  untilStopped,
} from './common.ts';

export const statusHelp = `Usage: leasehold status <name> [options]

Shows who holds the lock <name> as Redis has it: the holder's owner and token, since when, the
remaining TTL, and the last fencing token issued. Waiters are not listed: a mutex's waiters are not recorded
in Redis (they learn of a release from invalidation pushes).

${connectionHelp}
`;

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

export async function status(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values.help) return help(statusHelp);
  const name = lockName(positionals);
  const conn = connection(values);
  // Tracking on, so that the canary tells which notification mode an instance gets here.
  const driver = await openDriver(conn, true);
  try {
    const state = await query(() => readState(driver, conn, name));
    const notifications = modeOf(driver.proof);
    if (values.json) printJson({ ...state, notifications });
    else
      process.stdout.write(`${describeState(state)}notify     ${notifications}
`);
    return EXIT.ok;
  } finally {
    await driver.close();
  }
}

/** The notification mode an instance on this connection runs in, and why, in one line. */
function modeOf(proof: TrackingProof | undefined): string {
  if (proof?.ok === true) return `tracking (pushes proven, ${proof.rule} rule)`;
  return `polling (${proof?.reason?.message ?? 'unproven'})`;
}

export function describeState(s: LockState): string {
  const lines = [`lock       ${s.name}  (key ${s.key})`];
  if (s.held) {
    lines.push('state      held');
    lines.push(`holder     ${s.owner ?? '(no owner recorded)'}, token ${s.token}`);
    if (s.since !== null)
      lines.push(`since      ${new Date(s.since).toISOString()} (${formatMs(Date.now() - s.since)} ago)`);
    lines.push(
      `ttl        ${s.ttl === -1 ? 'none (the key never expires!)' : `${formatMs(s.ttl ?? 0)} remaining`}`,
    );
  } else {
    lines.push('state      free');
  }
  lines.push(`fencing    ${s.fencingToken} (last token issued)`);
  lines.push('waiters    not recorded in Redis for a mutex');
  return `${lines.join('\n')}\n`;
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
    const deleted = Number(await query(() => driver.command(['DEL', key]))) === 1;
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
  const driver = await openDriver(conn, true);
  const watcher = new Watcher(driver, conn, name, values);
  await watcher.refresh();
  await untilStopped();
  watcher.stop();
  await driver.close();
  return EXIT.ok;
}

/** How often `watch` reads when pushes are unproven. */
const POLL_MS = 1_000;

/** Re-reads the lock on every push for its key (the read re-arms tracking) and prints transitions. */
class Watcher {
  readonly #driver: Driver;
  readonly #conn: Connection;
  readonly #name: string;
  readonly #json: boolean;
  #last: LockState | undefined;
  #expiresAt: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> | undefined;
  #again = false;
  #poll: NodeJS.Timeout | undefined;

  constructor(driver: Driver, conn: Connection, name: string, values: Values) {
    this.#driver = driver;
    this.#conn = conn;
    this.#name = name;
    this.#json = values.json === true;
    const { key } = keysOf(conn, name);
    driver.setHandlers({
      invalidate: (keys) => {
        if (keys === null || keys.includes(key)) void this.refresh();
      },
      reset: () => void this.refresh(),
      disconnected: (error) => this.#print('disconnected', { error: error?.message }, 'connection lost'),
      proven: (proof) => this.#proven(proof),
    });
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

  async refresh(): Promise<void> {
    if (this.#reading !== undefined) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        try {
          this.#update(await readState(this.#driver, this.#conn, this.#name));
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
    clearTimeout(this.#timer);
    clearInterval(this.#poll);
  }

  #update(next: LockState): void {
    const prev = this.#last;
    this.#last = next;
    // A key that vanished once its TTL had run out expired; earlier, someone deleted it.
    const expired = this.#expiresAt !== undefined && Date.now() >= this.#expiresAt - 20;
    this.#expiresAt = next.held && next.ttl !== null && next.ttl >= 0 ? Date.now() + next.ttl : undefined;
    clearTimeout(this.#timer);
    // Redis's own expiry push can lag by seconds: read again when the TTL should have run out.
    if (next.held && next.ttl !== null && next.ttl >= 0) {
      this.#timer = setTimeout(() => void this.refresh(), next.ttl + 1);
      this.#timer.unref();
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

async function query<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw new CliError(`Redis command failed: ${(error as Error).message}`, EXIT.unavailable);
  }
}

function help(text: string): number {
  process.stdout.write(text);
  return EXIT.ok;
}
