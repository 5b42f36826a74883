import type { Primitive } from '../inspect/key-names.ts';
import type { Holder, Inspection } from '../primitives/inspection.ts';
import { REGISTRY, stateOf } from '../primitives/registry.ts';
import { printJson } from './common.ts';
import { type LiveEntry, type LiveView, POLL_MS, type TimelineEvent } from './live.ts';
import { formatMs } from './values.ts';

/**
 * One line per change of a live view, for `watch` and for `top` when its output is not a
 * terminal: the time, the primitive and name, and what changed (who holds it, with what, who
 * waits), as words for a person or as JSON lines. `only` keeps one name's changes.
 */
export function printChanges(view: LiveView, json: boolean, only?: string): { snapshot(): number } {
  const mine = (name: string) => only === undefined || name === only;
  const last = new Map<string, string>();
  /** Until the snapshot, what the first read found is the snapshot's, not a change. */
  let started = false;
  const out = (
    event: string,
    name: string,
    primitive: Primitive,
    fields: Record<string, unknown>,
    human: string,
  ) => {
    if (json) printJson({ time: new Date().toISOString(), event, name, primitive, ...fields });
    else
      process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${primitive} "${name}"  ${human}\n`);
  };
  view.on('timeline', (e: TimelineEvent) => {
    if (!started || !mine(e.name)) return;
    const who = e.owner ?? '(no owner recorded)';
    const words =
      e.type === 'handoff'
        ? `${e.previousOwner ?? '?'} -> ${who}`
        : `${e.type === 'acquired' ? 'by' : 'was'} ${who}`;
    const fields = {
      owner: e.owner,
      previousOwner: e.previousOwner,
      fencingToken: e.fencingToken?.toString(),
    };
    out(
      e.type,
      e.name,
      e.primitive,
      fields,
      `${e.type} ${words}${e.fencingToken === undefined ? '' : `, token ${e.fencingToken}`}`,
    );
  });
  view.on('entry', (entry: LiveEntry) => {
    const i = entry.inspection;
    if (!started || !mine(i.name)) return;
    // Extensions change TTLs only: said once the hands or the line change.
    const now = signature(i);
    const before = last.get(entry.key);
    last.set(entry.key, now);
    if (before === undefined || before === now) return;
    out('changed', i.name, i.primitive, fieldsOf(i), describe(i));
  });
  view.on('remove', ({ key, name, primitive }) => {
    last.delete(key);
    if (!started || !mine(name)) return;
    out('free', name, primitive, {}, 'free: nobody holds or waits');
  });
  const mode = (mode: 'tracking' | 'polling', reason: string | undefined) => {
    const words =
      mode === 'polling'
        ? `polling every ${POLL_MS} ms${reason === undefined ? '' : `: ${reason}`}`
        : 'tracking: changes are pushed again';
    if (json) printJson({ time: new Date().toISOString(), event: mode, reason });
    else process.stdout.write(`${new Date().toISOString().slice(11, 23)}  ${words}\n`);
  };
  // Before the snapshot, the snapshot says how the view follows changes.
  view.on('mode', (change) => {
    if (started) mode(change.mode, change.reason);
  });
  view.on('error', (error) => {
    if (json) printJson({ time: new Date().toISOString(), event: 'error', error: error.message });
    else process.stdout.write(`${new Date().toISOString().slice(11, 23)}  error: ${error.message}\n`);
  });
  return {
    /** Prints what the view holds now, one line per name (and primitive); returns how many. */
    snapshot(): number {
      started = true;
      // Tracking is the rule: said only when it is not.
      if (view.mode === 'polling') mode('polling', view.modeReason);
      let shown = 0;
      for (const entry of view.entries.values()) {
        const i = entry.inspection;
        if (!mine(i.name)) continue;
        shown += 1;
        last.set(entry.key, signature(i));
        out(i.holders.length > 0 ? 'held' : 'waited', i.name, i.primitive, fieldsOf(i), describe(i));
      }
      return shown;
    },
  };
}

/** The state of one name in words: its state, its holders, its waiters (each caller counted). */
export function describe(i: Inspection): string {
  const holders = i.holders.map(holderWords).join('; ');
  const waiting = i.waiters === undefined ? '' : `; waiters ${i.queued ?? i.waiters.length}${firstWaiter(i)}`;
  return `${stateOf(i)}${holders === '' ? '' : `: ${holders}`}${waiting}`;
}

function holderWords(h: Holder): string {
  const what = [
    h.role,
    h.permits === undefined ? undefined : `${h.permits} permit${h.permits === 1 ? '' : 's'}`,
  ]
    .filter((x) => x !== undefined)
    .join(', ');
  const ttl = h.ttlLeft < 0 ? 'no TTL' : `${formatMs(h.ttlLeft)} left`;
  const token = h.fencingToken === undefined ? '' : `, token ${h.fencingToken}`;
  return `${h.owner ?? '(no owner recorded)'}${what === '' ? '' : ` (${what})`}${token}, ${ttl}`;
}

function firstWaiter(i: Inspection): string {
  const first = i.waiters?.[0];
  return first === undefined ? '' : ` (first: ${first.owner ?? '?'})`;
}

function fieldsOf(i: Inspection): Record<string, unknown> {
  return {
    state: stateOf(i),
    title: REGISTRY[i.primitive].describe.title,
    holders: i.holders.map((h) => ({ ...h, fencingToken: h.fencingToken?.toString() })),
    waiters: i.waiters?.map((w) => ({ owner: w.owner, role: w.role })),
    queued: i.queued,
    lastFencingToken: i.lastFencingToken.toString(),
  };
}

/** Who holds and who waits, without TTLs: what changes when hands change or the line moves. */
function signature(i: Inspection): string {
  return [
    ...i.holders.map((h) => `${h.token}:${h.permits ?? 1}`),
    '|',
    ...(i.waiters ?? []).map((w) => w.token),
  ].join(',');
}
