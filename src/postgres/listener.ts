import type { Client, ClientConfig, Notification, Pool } from 'pg';
import { after } from '../base/timer.ts';
import { timed } from './calls.ts';
import { quotedChannel } from './names.ts';

/** What the listening connection reports. Handlers must not throw. */
export interface ListenerEvents {
  notification(payload: string): void;
  /** The connection dropped (or was given up): notifications are lost until `up`. */
  down(error: Error): void;
  /** Listening (again), after a reconnect: what changed meanwhile was never heard. */
  up(): void;
}

const MAX_BACKOFF = 2_000;

/**
 * How often an idle listening connection proves it is alive. A flow a NAT or firewall dropped
 * leaves the socket looking open, and the OS's keepalive takes two hours to notice (finding 2
 * of issue 38): this bounds how long the instance believes it hears notifications while it does
 * not (then it polls, reconnects, and re-verifies). One `SELECT 1` per interval per instance.
 */
export const HEARTBEAT = 5_000;

/**
 * The one dedicated connection that LISTENs on the deployment's channel: PostgreSQL's push path,
 * what a tracked Redis connection is to the Redis drivers. Direct to the server, never through
 * PgBouncer in transaction mode (LISTEN is session state). It reconnects by itself with backoff
 * until closed; `check()`, every HEARTBEAT while up and whenever a pool call stalls, gives it up
 * when it does not answer a query in time (a black-holed network leaves a dead socket looking
 * open). A reconnect ends the old session on the server first (pg_terminate_backend): a session
 * whose client is gone keeps its LISTEN and its presence lock until the server's own keepalive
 * notices, and releases would go on granting to it.
 */
export class Listener {
  readonly #make: () => Client;
  readonly #channel: string;
  readonly #events: ListenerEvents;
  readonly #limit: number;
  #client: Client | undefined;
  #closed = false;
  #retry: (() => void) | undefined;
  #backoff = 50;
  /** A reconnect attempt is under way. */
  #opening = false;
  #heartbeat: (() => void) | undefined;
  /**
   * The server-side session of the connection now (its pid and start: a pid alone may be reused
   * by another session once this one is gone), and of one given up, to end before listening again.
   */
  #session: { pid: number; start: string } | undefined;
  #stale: { pid: number; start: string } | undefined;

  constructor(make: () => Client, channel: string, events: ListenerEvents, limit: number) {
    this.#make = make;
    this.#channel = channel;
    this.#events = events;
    this.#limit = limit;
  }

  /** Connects and listens; rejects when the first attempt fails (connect() reports it). */
  async start(): Promise<void> {
    await this.#open();
  }

  /** A query on the listening connection itself (its session's advisory locks: presence). */
  async query(text: string): Promise<void> {
    const client = this.#client;
    if (client === undefined) throw new Error('the PostgreSQL listening connection is down');
    await timed(client.query(text), this.#limit);
  }

  /** Whether the connection is up (listening). */
  get up(): boolean {
    return this.#client !== undefined;
  }

  /** Proves the connection answers; gives it up (and reconnects) when it does not in time. */
  async check(): Promise<void> {
    const client = this.#client;
    if (client === undefined) return;
    try {
      await timed(client.query('SELECT 1'), this.#limit);
    } catch (error) {
      this.#lost(client, error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * The server answers again (a call went through): a reconnect waiting out its backoff tries
   * now, so that pushes come back within moments of a stall or an outage ending.
   */
  nudge(): void {
    if (this.#retry === undefined || this.#closed || this.#opening) return;
    this.#retry();
    this.#retry = undefined;
    this.#backoff = 50;
    this.#attempt();
  }

  /** `force` (destroy()): the socket is cut at once instead of ended politely. */
  async close(force = false): Promise<void> {
    this.#closed = true;
    this.#retry?.();
    this.#heartbeat?.();
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    if (force) cut(client);
    else await timed(client.end(), 1_000).catch(() => cut(client));
  }

  async #open(): Promise<void> {
    const client = this.#make();
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('the PostgreSQL listening connection closed')));
    client.on('notification', (message: Notification) => {
      if (this.#client === client && message.payload !== undefined)
        this.#events.notification(message.payload);
    });
    try {
      await timed(client.connect(), this.#limit);
      const stale = this.#stale;
      if (stale !== undefined) {
        const end = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1 AND backend_start::text = $2`;
        await timed(client.query(end, [stale.pid, stale.start]), this.#limit);
        this.#stale = undefined;
      }
      const me = await timed(
        client.query<{ pid: number; start: string }>(
          'SELECT pid, backend_start::text AS start FROM pg_stat_activity WHERE pid = pg_backend_pid()',
        ),
        this.#limit,
      );
      this.#session = me.rows[0];
      await timed(client.query(`LISTEN ${quotedChannel(this.#channel)}`), this.#limit);
    } catch (error) {
      cut(client);
      throw error;
    }
    if (this.#closed) {
      cut(client);
      return;
    }
    this.#client = client;
    this.#backoff = 50;
    this.#beat();
  }

  /** The next heartbeat (an unref'd timer: it never keeps a process alive). */
  #beat(): void {
    this.#heartbeat?.();
    this.#heartbeat = after(HEARTBEAT, () => {
      this.#heartbeat = undefined;
      if (this.#closed || this.#client === undefined) return;
      void this.check().then(() => {
        if (this.#client !== undefined) this.#beat();
      });
    });
  }

  #lost(client: Client, error: Error): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#heartbeat?.();
    this.#heartbeat = undefined;
    this.#stale = this.#session;
    this.#session = undefined;
    cut(client);
    if (this.#closed) return;
    this.#events.down(error);
    this.#reconnect();
  }

  #reconnect(): void {
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF);
    this.#retry = after(delay, () => {
      this.#retry = undefined;
      this.#attempt();
    });
  }

  #attempt(): void {
    if (this.#closed) return;
    this.#opening = true;
    this.#open().then(
      () => {
        this.#opening = false;
        if (!this.#closed) this.#events.up();
      },
      () => {
        this.#opening = false;
        this.#reconnect();
      },
    );
  }
}

/** Drops a connection at once (its socket), whatever state it is in. */
function cut(client: Client): void {
  try {
    const stream = (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection
      ?.stream;
    stream?.destroy?.();
  } catch {
    // already gone
  }
}

/** Where the listening connection goes (PostgresDriverOptions' part of it). */
export interface ListenSettings {
  url?: string | undefined;
  pool?: Pool | undefined;
  listenUrl?: string | undefined;
  commandTimeout: number;
}

/** The listening connection's settings: `listenUrl`, the URL, or the user's pool's own. */
export function listenConfig(o: ListenSettings): ClientConfig {
  const base: ClientConfig =
    o.listenUrl !== undefined
      ? { connectionString: o.listenUrl }
      : o.url !== undefined
        ? { connectionString: o.url }
        : { ...((o.pool as unknown as { options?: ClientConfig }).options ?? {}) };
  return { ...base, keepAlive: true, connectionTimeoutMillis: o.commandTimeout };
}
