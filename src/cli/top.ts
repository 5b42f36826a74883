import { parseArgs } from 'node:util';
import type { Holder, Inspection } from '../primitives/inspection.ts';
import { printChanges } from './changes.ts';
import { connection, connectionHelp, connectionOptions, printJson } from './common.ts';
import { EXIT } from './exit.ts';
import { type LiveEntry, LiveView, startLive } from './live.ts';
import { topologyHelp } from './topology.ts';
import { followLimit, formatMs } from './values.ts';

export const topHelp = `Usage: leasehold top [<name-prefix>] [options]

A live view of the busiest names under <name-prefix> (every name when left out): each name's
primitive, holder (owner), HELD (how long ago the holder got the lease; leasehold status also
says when it began to ask), remaining TTL, fencing token and waiters (WAIT counts processes:
only each process's first caller for a name registers). Updated from
invalidation pushes (CLIENT TRACKING BCAST on the prefix): only the names a push names are read
again, and nothing is sent to Redis while nothing changes. Read-only. Ctrl-C (or q) stops.

Options:
  --limit <n>         follow at most n names (default 1000)
  --json              one JSON line per change instead of the screen: a "snapshot" line per
                      name at start, then "entry", "remove" and timeline lines
                      ("acquired", "handoff", "released", "expired")

When its output is not a terminal (a pipe, a file), top writes one plain line per change, as
\`leasehold watch\` does, instead of redrawing a screen. leasehold prints no colours (NO_COLOR
changes nothing).

${connectionHelp}

${topologyHelp}
`;

export async function top(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...connectionOptions, limit: { type: 'string' } },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(topHelp);
    return EXIT.ok;
  }
  const conn = connection(values);
  const limit = followLimit(values.limit);
  const names = positionals[0] ?? '';
  const view = new LiveView(conn, names, limit);
  const json = values.json === true;
  // Into a pipe or a file, a screen's redraws are noise: one line per change instead.
  const lines = !json && process.stdout.isTTY !== true;
  const screen = json || lines ? undefined : new Screen(view, names);
  const plain = lines ? printChanges(view, false) : undefined;
  view.on('error', (error) => {
    if (json) printJson({ time: new Date().toISOString(), event: 'error', error: error.message });
    else screen?.status(`error: ${error.message}`);
  });
  if (json) {
    view.on('entry', (entry) => printJson({ time: new Date().toISOString(), event: 'entry', ...row(entry) }));
    view.on('remove', ({ name, primitive }) =>
      printJson({ time: new Date().toISOString(), event: 'remove', name, primitive }),
    );
    view.on('timeline', (event) =>
      printJson({ ...event, time: new Date(event.time).toISOString(), event: event.type, type: undefined }),
    );
    view.on('mode', (mode) => printJson({ time: new Date().toISOString(), event: 'mode', ...mode }));
  }
  const signals = await startLive(view);
  if (lines)
    process.stdout.write(
      `${new Date().toISOString().slice(11, 23)}  leasehold top  ${names === '' ? '(every name)' : names}  ${view.entries.size} name${view.entries.size === 1 ? '' : 's'}\n`,
    );
  plain?.snapshot();
  if (json)
    printJson({ time: new Date().toISOString(), event: 'ready', mode: view.mode, names: view.entries.size });
  screen?.start();
  const keys = !json && process.stdin.isTTY;
  const key = (data: Buffer) => {
    if (data.toString() === 'q' || data[0] === 3) signals.stop();
  };
  if (keys) {
    process.stdin.setRawMode(true);
    process.stdin.on('data', key);
  }
  await signals.stopped;
  screen?.stop();
  if (keys) {
    process.stdin.off('data', key);
    process.stdin.setRawMode(false);
    process.stdin.pause();
  }
  await view.close();
  return EXIT.ok;
}

/** A name's row as JSON: the inspection with ages instead of epoch times. */
export function row(entry: LiveEntry): Record<string, unknown> {
  const { inspection } = entry;
  const held = copies(inspection);
  return {
    ...inspection,
    ...(held === undefined ? {} : { copies: held, underReplicated: held.on < held.of }),
    changes: entry.changes,
    holders: inspection.holders.map((h) => ({
      ...h,
      age: h.grantedAt === undefined ? undefined : Date.now() - h.grantedAt,
    })),
  };
}

/**
 * Quorum mode: on how many nodes the (first) holder's key is, of how many. Fewer than all: the
 * name is under-replicated (a node restarted empty or lost the key; the extensions put it back).
 */
export function copies(i: Inspection): { on: number; of: number } | undefined {
  const token = i.holders[0]?.token;
  if (i.nodes === undefined || token === undefined) return undefined;
  return { on: i.nodes.filter((n) => n.holders.some((h) => h.token === token)).length, of: i.nodes.length };
}

/** The full-screen table: redrawn on every change, and every second for the TTL countdown. */
class Screen {
  readonly #view: LiveView;
  readonly #names: string;
  #timer: NodeJS.Timeout | undefined;
  #pending = false;
  #status = '';
  readonly #recent: string[] = [];

  constructor(view: LiveView, names: string) {
    this.#view = view;
    this.#names = names;
    view.on('entry', () => this.draw());
    view.on('remove', () => this.draw());
    view.on('mode', () => this.draw());
    view.on('timeline', (e) => {
      const who = e.owner ?? '?';
      const text =
        e.type === 'handoff'
          ? `${e.name}: ${e.previousOwner ?? '?'} -> ${who}`
          : `${e.name}: ${e.type} (${who})`;
      this.#recent.unshift(`${new Date(e.time).toISOString().slice(11, 19)}  ${text}`);
      this.#recent.length = Math.min(this.#recent.length, 5);
    });
  }

  start(): void {
    process.stdout.write('\x1b[?25l');
    this.draw();
    // A local redraw for the TTL countdown: no Redis command.
    this.#timer = setInterval(() => this.draw(), 1_000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    process.stdout.write('\x1b[?25h\n');
  }

  status(text: string): void {
    this.#status = text;
    this.draw();
  }

  /** Coalesces bursts of changes into one redraw per tick. */
  draw(): void {
    if (this.#pending) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      process.stdout.write(`\x1b[H\x1b[2J${this.render()}`);
    });
  }

  render(): string {
    const rows = process.stdout.rows ?? 40;
    const entries = [...this.#view.entries.values()].sort(
      (a, b) => b.changes - a.changes || (a.key < b.key ? -1 : 1),
    );
    const lines = [
      `leasehold top  ${this.#names === '' ? '(every name)' : this.#names}  ${entries.length} names  ` +
        `mode ${this.#view.mode}  ${new Date().toISOString().slice(11, 19)}  (q quits)`,
      '',
      pad(['NAME', 'KIND', 'HOLDER', 'HELD', 'TTL', 'FENCE', 'WAIT', 'CHG']),
    ];
    const room = Math.max(1, rows - lines.length - 8);
    for (const entry of entries.slice(0, room)) lines.push(line(entry));
    if (entries.length > room) lines.push(`... ${entries.length - room} more`);
    lines.push('', ...this.#recent);
    if (this.#status !== '') lines.push('', this.#status);
    return `${lines.join('\n')}\n`;
  }
}

const WIDTHS = [28, 9, 30, 8, 8, 18, 5, 5];

function pad(cells: string[]): string {
  return cells
    .map((c, i) => cut(c, WIDTHS[i] ?? 10).padEnd(WIDTHS[i] ?? 10))
    .join(' ')
    .trimEnd();
}

function cut(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}

function line(entry: LiveEntry): string {
  const i: Inspection = entry.inspection;
  const first: Holder | undefined = i.holders[0];
  const elapsed = Date.now() - entry.readAt;
  const holder =
    first === undefined
      ? '-'
      : i.holders.length > 1
        ? `${first.owner ?? '?'} +${i.holders.length - 1}`
        : (first.owner ?? '?');
  const held = copies(i);
  const where = held === undefined ? '' : ` [${held.on}/${held.of}${held.on < held.of ? ' !' : ''}]`;
  const age = first?.grantedAt === undefined ? '-' : formatMs(Math.max(0, Date.now() - first.grantedAt));
  const ttl =
    first === undefined ? '-' : first.ttlLeft < 0 ? 'none' : formatMs(Math.max(0, first.ttlLeft - elapsed));
  const fence = String(first?.fencingToken ?? i.lastFencingToken);
  const waiting = i.waiters === undefined ? '' : String(i.queued ?? i.waiters.length);
  return pad([i.name, i.primitive, holder + where, age, ttl, fence, waiting, String(entry.changes)]);
}
