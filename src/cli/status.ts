import { parseArgs } from 'node:util';
import type { TrackingProof } from '../driver/types.ts';
import { inspectionKeys, PRIMITIVES, type Primitive } from '../inspect/key-names.ts';
import type { Holder, Inspection, Waiter } from '../primitives/inspection.ts';
import { REGISTRY, stateOf } from '../primitives/registry.ts';
import { connection, connectionHelp, connectionOptions, lockName, printJson } from './common.ts';
import { CliError, EXIT } from './exit.ts';
import { openTargets, readPrimitives, weakestProof } from './targets.ts';
import { topologyHelp } from './topology.ts';
import { formatMs } from './values.ts';

/** The primitives' titles, "a, b or c" (from the registry, so a new primitive shows up here). */
const either = (titles: readonly string[]) => `${titles.slice(0, -1).join(', ')} or ${titles.at(-1)}`;
const TITLES = PRIMITIVES.map((p) => REGISTRY[p].describe.title);

export const statusHelp = `Usage: leasehold status <name> [options]

Shows what Redis has for <name>, for every primitive with keys under it:
${either(TITLES)}
(a multiLock holds mutexes). For each: who holds it (owner, token, since when, remaining
TTL, fencing token; a semaphore's permits per holder; a read-write lock's writer or
readers), who waits where Redis records it (a fair lock's queue, a read-write lock's
waiting writers), and the last fencing token issued.
Says so when the name has nothing. Read-only. Exit status 0 whether or not anything is held.

Options:
  --primitive <kind>  only this one: ${either(PRIMITIVES)}

${connectionHelp}

${topologyHelp}
`;

export async function status(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...connectionOptions, primitive: { type: 'string' } },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(statusHelp);
    return EXIT.ok;
  }
  const name = lockName(positionals);
  const only = values.primitive;
  if (only !== undefined && !PRIMITIVES.includes(only as Primitive)) {
    throw new CliError(`--primitive must be one of ${PRIMITIVES.join(', ')}; got ${only}`);
  }
  const conn = connection(values);
  // Tracking on, so that the canary tells which notification mode an instance gets here.
  const { drivers, labels } = await openTargets(conn, true);
  try {
    const found = await readPrimitives(
      { drivers, labels },
      conn.prefix,
      name,
      only === undefined ? PRIMITIVES : [only as Primitive],
    );
    const report = statusReport(name, conn.prefix, found, modeOf(weakestProof(drivers)));
    if (values.json) printJson(report);
    else process.stdout.write(describeStatus(report, only as Primitive | undefined));
    return EXIT.ok;
  } finally {
    await Promise.all(drivers.map((driver) => driver.close()));
  }
}

/** One primitive of a name as `status --json` prints it: `lh.inspect(name, { primitive })`, plus its keys. */
export type StatusEntry = Inspection & { keys: string[]; held: boolean };

export interface StatusReport {
  name: string;
  prefix: string;
  /** Whether any primitive has keys under this name. */
  found: boolean;
  /** Whether any of them has a holder right now. */
  held: boolean;
  primitives: StatusEntry[];
  notifications: string;
}

export function statusReport(
  name: string,
  prefix: string,
  found: readonly Inspection[],
  notifications: string,
): StatusReport {
  const primitives = found.map((i) => ({
    ...i,
    // Explicit null: "not recorded in Redis" must survive JSON (undefined would vanish).
    waiters: i.waiters ?? null,
    keys: inspectionKeys(prefix, name, i.primitive),
    held: i.holders.length > 0,
  })) as unknown as StatusEntry[];
  return {
    name,
    prefix,
    found: primitives.length > 0,
    held: primitives.some((p) => p.held),
    primitives,
    notifications,
  };
}

/** The notification mode an instance on this connection runs in, and why, in one line. */
export function modeOf(proof: TrackingProof | undefined): string {
  if (proof?.ok === true) return `tracking (pushes proven, ${proof.rule} rule)`;
  return `polling (${proof?.reason?.message ?? 'unproven'})`;
}

export function describeStatus(report: StatusReport, only?: Primitive): string {
  const lines = [`name       ${report.name}  (prefix ${report.prefix})`];
  if (!report.found) {
    const kinds = only === undefined ? `no ${either(TITLES)}` : `no ${REGISTRY[only].describe.title}`;
    lines.push(
      `state      nothing: ${kinds} has keys for this name in Redis (never used under this prefix, or every key expired)`,
    );
  }
  for (const entry of report.primitives) lines.push('', ...describeEntry(entry));
  lines.push('', `notify     ${report.notifications}`);
  return `${lines.join('\n')}\n`;
}

function describeEntry(e: StatusEntry): string[] {
  const { describe } = REGISTRY[e.primitive];
  const lines = [`${describe.title}  (keys ${e.keys.join(', ')})`];
  lines.push(`  state    ${stateOf(e)}`);
  for (const h of e.holders) lines.push(`  ${label(h)}${holderLine(h)}`);
  lines.push(...(describe.extra?.(e) ?? []));
  lines.push(`  fencing  ${e.lastFencingToken} (${describe.fencing})`);
  if (e.nodes !== undefined) lines.push(...nodeLines(e));
  const local = describe.localWaiters;
  if (e.waiters === null || e.waiters === undefined)
    lines.push(`  waiters  ${local ?? 'not recorded in Redis'}`);
  else if (e.waiters.length === 0)
    lines.push(`  waiters  none${describe.unlisted === undefined ? '' : ` (${describe.unlisted})`}`);
  else {
    const total = e.queued ?? e.waiters.length;
    const listed = total > e.waiters.length ? ` (${e.waiters.length} listed)` : '';
    const multi = e.waiters.some((w) => w.role === 'multiLock')
      ? '; multiLock waiters, listed last, take it once every name they want is free'
      : '';
    lines.push(`  waiters  ${total} ${describe.served ?? 'in line, first served first'}${listed}${multi}`);
    e.waiters.forEach((w, i) => {
      lines.push(`    ${i + 1}.     ${waiterLine(w)}`);
    });
    lines.push(`           ${PER_PROCESS}`);
  }
  return lines;
}

/**
 * What a listed waiter is: only the first of a process's callers for a name attempts (and so
 * registers); the others wait behind it in that process, where Redis cannot see them.
 */
const PER_PROCESS =
  "(one per process: each process's first caller; its others wait behind it there, unlisted)";

/**
 * Quorum mode: each node's copy. A holder a majority agrees on but some node lacks is
 * under-replicated (that node restarted empty, or lost the key): its extensions put it back.
 */
function nodeLines(e: StatusEntry): string[] {
  const nodes = e.nodes ?? [];
  const agreed = new Set(e.holders.map((h) => h.token));
  const lines = [`  nodes    ${nodes.length}, a majority is ${Math.floor(nodes.length / 2) + 1}`];
  let missing = 0;
  for (const node of nodes) {
    const copies =
      node.error !== undefined ? `unreadable: ${node.error}` : describeCopies(node.holders, agreed);
    if (node.error === undefined && [...agreed].some((t) => !node.holders.some((h) => h.token === t)))
      missing += 1;
    lines.push(`    ${node.node}  ${copies}, fencing counter ${node.lastFencingToken}`);
  }
  if (agreed.size > 0 && missing > 0)
    lines.push(`  replicas under-replicated: ${missing} of ${nodes.length} nodes lack the holder's key`);
  return lines;
}

function describeCopies(holders: readonly Holder[], agreed: ReadonlySet<string>): string {
  if (holders.length === 0) return agreed.size > 0 ? 'missing (no copy)' : 'free';
  return holders
    .map((h) => `${h.owner ?? '(no owner)'} token ${h.token}${agreed.has(h.token) ? '' : ' (no majority)'}`)
    .join('; ');
}

function label(h: Holder): string {
  const role = h.role ?? (h.value !== undefined ? 'leader' : 'holder');
  return role.padEnd(9);
}

function holderLine(h: Holder): string {
  const parts: string[] = [];
  if (h.value !== undefined) parts.push(`value ${JSON.stringify(h.value)}`);
  if (h.permits !== undefined) parts.push(`${h.permits} permit${h.permits === 1 ? '' : 's'}`);
  if (h.fencingToken !== undefined) parts.push(`fencing token ${h.fencingToken}`);
  parts.push(h.ttlLeft < 0 ? 'no TTL (the key never expires!)' : `${formatMs(h.ttlLeft)} left`);
  // When it got the lease, and when it began to ask: the same moment for a holder whose first
  // attempt got it (no grant note: src/base/grant-note-format.ts).
  if (h.grantedAt !== undefined && h.since !== undefined && h.grantedAt > h.since) {
    parts.push(`granted ${at(h.grantedAt)}`, `asked ${at(h.since)}`);
  } else if (h.since !== undefined) parts.push(`granted ${at(h.since)} at its first attempt`);
  parts.push(`token ${h.token}`);
  return `${h.owner ?? '(no owner recorded)'}: ${parts.join(', ')}`;
}

function waiterLine(w: Waiter): string {
  const parts = [
    ...(w.role === undefined ? [] : [w.role]),
    ...(w.since === undefined ? [] : [`waiting since ${at(w.since)}`]),
    `dropped in ${formatMs(w.deadlineIn)} unless it retries`,
    `token ${w.token}`,
  ];
  return `${w.owner ?? '(no owner recorded)'}: ${parts.join(', ')}`;
}

function at(epoch: number): string {
  return `${new Date(epoch).toISOString()} (${formatMs(Math.max(0, Date.now() - epoch))} ago)`;
}
