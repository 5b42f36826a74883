import { parseArgs } from 'node:util';
import type { Driver } from '../driver/types.ts';
import { type Freed, forceRelease } from '../inspect/force.ts';
import { PRIMITIVES, type Primitive } from '../inspect/key-names.ts';
import type { Inspection } from '../primitives/inspection.ts';
import { REGISTRY } from '../primitives/registry.ts';
import { printChanges } from './changes.ts';
import {
  connection,
  connectionHelp,
  connectionOptions,
  lockName,
  mutexKeysOf,
  printJson,
  redisFailure,
} from './common.ts';
import { CliError, EXIT } from './exit.ts';
import { LiveView, startLive } from './live.ts';
import { openTargets, readPrimitives } from './targets.ts';
import { topologyHelp } from './topology.ts';

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

Prints every change to <name> as it happens, whatever holds it (a mutex, a semaphore's permits,
a read-write lock's readers and writer, a fair lock and its line, an election's leader): its
state first, then each change of hands ("acquired", "handoff", "released", "expired") and of who
holds or waits ("changed"), and "free" when nobody holds or waits any more. From invalidation
pushes (CLIENT TRACKING BCAST on the name): nothing is sent while nothing changes. Extensions are
not printed. Ctrl-C stops.

Options:
  --json              one JSON line per change

${connectionHelp}
`;

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
    const held = (
      await readPrimitives(
        { drivers, labels },
        conn.prefix,
        name,
        only === undefined ? PRIMITIVES : [only as Primitive],
      )
    ).filter((inspection) => only !== undefined || busy(inspection));
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
        key: mutexKeysOf(conn, name).key,
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
  const json = values.json === true;
  // Every primitive of the name, on every topology: the live view of `top`, kept to this name.
  const view = new LiveView(conn, name, 1_000);
  const changes = printChanges(view, json, name);
  const signals = await startLive(view);
  try {
    if (changes.snapshot() === 0) {
      if (json) printJson({ time: new Date().toISOString(), event: 'free', name });
      else
        process.stdout.write(
          `${new Date().toISOString().slice(11, 23)}  "${name}"  free: nobody holds or waits for it\n`,
        );
    }
    await signals.stopped;
    return EXIT.ok;
  } finally {
    await view.close();
  }
}

function help(text: string): number {
  process.stdout.write(text);
  return EXIT.ok;
}
