import { keySlot, SLOTS } from '../base/slot.ts';
import { within } from '../base/timeouts.ts';
import type { Driver, NodeDriverFactory } from './types.ts';

// Moved to src/base (a fence mark's key is named after its slot): re-exported for the drivers.
export { keySlot, SLOTS };

/** One master and the slot ranges it serves, from CLUSTER SLOTS. */
export interface SlotRange {
  first: number;
  last: number;
  /** `host:port` of the master. */
  address: string;
}

/**
 * Parses a CLUSTER SLOTS reply: `[[first, last, [host, port, id, ...], ...replicas], ...]`.
 * An empty host means "the node you asked", whose host is `fallbackHost`.
 */
export function parseClusterSlots(reply: unknown, fallbackHost: string): SlotRange[] {
  if (!Array.isArray(reply)) throw new Error(`unexpected CLUSTER SLOTS reply: ${String(reply)}`);
  return reply.map((entry: unknown) => {
    if (!Array.isArray(entry) || entry.length < 3 || !Array.isArray(entry[2])) {
      throw new Error(`unexpected CLUSTER SLOTS entry: ${JSON.stringify(entry)}`);
    }
    const [first, last, master] = entry as [unknown, unknown, unknown[]];
    const host = text(master[0]);
    return {
      first: Number(first),
      last: Number(last),
      address: joinAddress(host === '' || host === '?' ? fallbackHost : host, Number(master[1])),
    };
  });
}

/** `host:port`, with brackets around an IPv6 host. */
export function joinAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The URL of a node at `address`, with the scheme and credentials of a root node's URL. */
export function nodeUrl(template: string, address: string): string {
  const url = new URL(template);
  const auth = url.username !== '' || url.password !== '' ? `${url.username}:${url.password}@` : '';
  return `${url.protocol}//${auth}${address}`;
}

/** `host:port` of a URL (what CLUSTER SLOTS and MOVED / ASK replies name). */
export function addressOf(url: string): string {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return joinAddress(host, Number(parsed.port === '' ? 6379 : parsed.port));
}

/** The host part of an address. */
export function hostOf(address: string): string {
  return address.slice(0, address.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
}

/** `MOVED <slot> <host:port>` / `ASK <slot> <host:port>`: the kind and the address, if it is one. */
export function redirection(error: unknown): { kind: 'MOVED' | 'ASK'; address: string } | undefined {
  if (!(error instanceof Error)) return undefined;
  const match = /^(MOVED|ASK) \d+ (\S+)/.exec(error.message);
  if (match === null) return undefined;
  return { kind: match[1] as 'MOVED' | 'ASK', address: match[2] ?? '' };
}

function text(value: unknown): string {
  return value instanceof Uint8Array ? Buffer.from(value).toString() : String(value ?? '');
}

/** How long one CLUSTER SLOTS query may take before the next node is asked. */
const QUERY_TIMEOUT = 1_000;

/** A master's slot map (CLUSTER SLOTS), within QUERY_TIMEOUT. */
export async function querySlots(driver: Driver, address: string): Promise<SlotRange[]> {
  const reply = await within(driver.command(['CLUSTER', 'SLOTS']), QUERY_TIMEOUT);
  return parseClusterSlots(reply, hostOf(address));
}

/** The slot map from a root node, on a connection of its own closed afterwards. */
export async function queryRootSlots(factory: NodeDriverFactory, url: string): Promise<SlotRange[]> {
  const driver = factory(url, false);
  try {
    await within(driver.connect(), QUERY_TIMEOUT);
    return await querySlots(driver, addressOf(url));
  } finally {
    await driver.close().catch(() => {});
  }
}

/**
 * A canary key base in a slot `mine` accepts (a master's own), so a proof runs on that master's
 * connection: the first tag `canary-<i>` that hashes there (a few tries per master).
 */
export function canaryKeyIn(prefix: string, mine: (slot: number) => boolean): string {
  const token = Math.random().toString(36).slice(2);
  for (let i = 0; i < SLOTS * 4; i++) {
    const base = `${prefix}:{canary-${i}}:${token}`;
    if (mine(keySlot(base))) return base;
  }
  return `${prefix}:{canary}:${token}`;
}

/** One master and the driver (one connection, tracking with NOLOOP) leasehold holds to it. */
export interface NodeEntry {
  readonly address: string;
  readonly driver: Driver;
  /** The first connect; rejects when it fails. */
  readonly connected: Promise<void>;
  /** Settles when the first connect settles or CONNECT_WAIT passes, whichever is first. */
  readonly ready: Promise<void>;
  /** Changes on every reconnect and drop: WAIT must go to the connection that wrote. */
  epoch: number;
  /** Connected once and dropped since, or the first connect failed: a failover may be under way. */
  down: boolean;
}

/** The slot a command goes to: its first key's, or any slot for a keyless command. */
export const slotOf = (key: string | undefined): number =>
  key === undefined ? Math.floor(Math.random() * SLOTS) : keySlot(key);
