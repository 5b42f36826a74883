import { parseArgs } from 'node:util';
import { after } from '../base/timer.ts';
import type { Driver, DriverHandlers, TrackingProof } from '../driver/types.ts';
import { type Freed, forceRelease } from '../inspect/force.ts';
import { Inspector } from '../inspect/inspector.ts';
import { PRIMITIVES, type Primitive } from '../inspect/layout.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { REGISTRY } from '../primitives/registry.ts';
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
import { oneRedisOnly, openTargets } from './targets.ts';
import { topologyHelp } from './topology.ts';
import { formatMs } from './values.ts';

export const releaseHelp = `Usage: leasehold release --force <name> [options]

Frees <name> whoever holds it: every holder, or the one --token names. Each is released
through the primitive's own release script, as its lease.release() would: the next in line is
granted the lock (direct grant) or woken at once, and the fencing counter is kept, so the next
holder's token exceeds the last one issued (printed). The freed holder's lease.signal aborts at
once (LockLostError) where its lease listens to its own key (a mutex and each multiLock name, a
fair lock, a writer, a leader); a semaphore permit or a reader learns of it at its next extension,
within a third of its TTL. --force is required: the CLI never holds the lease's token, so this is
always a takeover of someone else's lease.

Options:
  --primitive <kind>  which primitive of <name>: ${PRIMITIVES.join(', ')} (default: the one
                      that has a holder; several: say which)
  --token <token>     only the holder whose lease.token this is (leasehold status lists them):
                      one permit holder or reader among several

${connectionHelp}

${topologyHelp}
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
    options: {
      ...connectionOptions,
      force: { type: 'boolean' },
      primitive: { type: 'string' },
      token: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (values.help) return help(releaseHelp);
  const name = lockName(positionals);
  if (values.force !== true) {
    throw new CliError('--force is required (the CLI does not hold the lease; this frees whoever holds it)');
  }
  const only = values.primitive;
  if (only !== undefined && !PRIMITIVES.includes(only as Primitive)) {
    throw new CliError(`--primitive must be one of ${PRIMITIVES.join(', ')}; got ${only}`);
  }
  if (values.token !== undefined && values.token === '') throw new CliError('--token must not be empty');
  const conn = connection(values);
  const { drivers, labels } = await openTargets(conn, false);
  try {
    const inspector = new Inspector(
      drivers.map((driver, i) => ({ label: labels[i] ?? 'redis', driver })),
      conn.prefix,
    );
    const held: Inspection[] = [];
    for (const primitive of only === undefined ? PRIMITIVES : [only as Primitive]) {
      const inspection = await inspector
        .inspect(name, { primitive })
        .catch((error: unknown) => redisFailure(error, `reading the ${primitive} "${name}"`));
      if (inspection !== undefined && (only !== undefined || busy(inspection))) held.push(inspection);
    }
    if (held.length > 1) {
      throw new CliError(
        `"${name}" is held as ${held.map((i) => i.primitive).join(' and ')}: say which with --primitive`,
      );
    }
    const [target] = held;
    const primitive = target?.primitive ?? 'mutex';
    // A quorum: every node, each with the values it stores (a holder's copy on each node).
    const freed =
      target === undefined
        ? []
        : await freeOnEvery(drivers, labels, conn.prefix, name, primitive, values.token).catch(
            (error: unknown) => redisFailure(error, `releasing the ${primitive} "${name}"`),
          );
    const last = target?.lastFencingToken ?? 0n;
    const released = freed.some((f) => f.released);
    if (values.json) {
      printJson({
        name,
        primitive,
        key: keysOf(conn, name).key,
        released,
        freed,
        lastFencingToken: String(last),
      });
    } else process.stdout.write(describeRelease(name, primitive, freed, last, values.token));
    return EXIT.ok;
  } finally {
    await Promise.all(drivers.map((driver) => driver.close()));
  }
}

/** Held on one Redis, or on any node of a quorum (a copy left on a minority still blocks it there). */
const busy = (i: Inspection): boolean =>
  i.holders.length > 0 || (i.nodes?.some((n) => n.holders.length > 0) ?? false);

/**
 * forceRelease on every driver (one, or each node of a quorum); a holder freed on several nodes
 * is listed once, with the nodes it was freed on.
 */
async function freeOnEvery(
  drivers: readonly Driver[],
  labels: readonly string[],
  prefix: string,
  name: string,
  primitive: Primitive,
  token: string | undefined,
): Promise<Freed[]> {
  const perNode = await Promise.all(drivers.map((d) => forceRelease(d, prefix, name, primitive, token)));
  if (drivers.length === 1) return perNode[0] ?? [];
  const byToken = new Map<string, Freed & { nodes: string[] }>();
  for (const [i, freed] of perNode.entries()) {
    for (const f of freed) {
      const known = byToken.get(f.token);
      const node = labels[i] ?? String(i);
      if (known === undefined) byToken.set(f.token, { ...f, nodes: f.released ? [node] : [] });
      else {
        known.released ||= f.released;
        if (f.released) known.nodes.push(node);
      }
    }
  }
  return [...byToken.values()];
}

/** What `release --force` did, for a person: who was freed, and the token the next holder exceeds. */
function describeRelease(
  name: string,
  primitive: Primitive,
  freed: readonly Freed[],
  last: bigint,
  token: string | undefined,
): string {
  const what = `${REGISTRY[primitive].describe.title} "${name}"`;
  if (freed.length === 0) return `${what} was not held${token === undefined ? '' : ` by token ${token}`}\n`;
  const lines = freed.map((f) => {
    const who = [f.role, f.owner ?? '(no owner recorded)'].filter((x) => x !== undefined).join(' ');
    const permits = f.permits === undefined ? '' : `, ${f.permits} permit${f.permits === 1 ? '' : 's'}`;
    const gone = f.released ? '' : ' (it had left meanwhile)';
    const where =
      f.nodes === undefined ? '' : `, on ${f.nodes.length} node${f.nodes.length === 1 ? '' : 's'}`;
    return `  ${who}${permits}, token ${f.token}${where}${gone}`;
  });
  const verb = freed.some((f) => f.released) ? 'released' : 'nothing to release:';
  return `${verb} ${what}\n${lines.join('\n')}\nthe next holder's fencing token will exceed ${last}\n`;
}

export async function watch(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values.help) return help(watchHelp);
  const name = lockName(positionals);
  const conn = connection(values);
  oneRedisOnly(conn, 'watch');
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

function help(text: string): number {
  process.stdout.write(text);
  return EXIT.ok;
}
