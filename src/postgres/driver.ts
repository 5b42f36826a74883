import type { Pool } from 'pg';
import { monotonic } from '../base/clock.ts';
import { newToken } from '../base/token.ts';
import { Canary, type CanaryPort } from '../driver/canary.ts';
import {
  asError,
  closeWithin,
  type Driver,
  type DriverHandlers,
  NO_HANDLERS,
  type ResetInfo,
  type ScriptCall,
  type Subscription,
  type SubscriptionHandlers,
  type TrackingProof,
} from '../driver/types.ts';
import { ConnectionClosedError } from '../errors.ts';
import { LuaScripts } from '../memory/lua.ts';
import {
  asReply,
  cutPool,
  fromPostgres,
  loadPg,
  type Query,
  sqlState,
  timed,
  withConnection,
} from './calls.ts';
import type { Row } from './codec.ts';
import { plainCommand } from './commands.ts';
import { ExpiryTimers } from './expiry.ts';
import { Listener, listenConfig } from './listener.ts';
import type { PgNames } from './names.ts';
import { migrate, schemaState, standbyError } from './schema.ts';
import type { Host, ScratchRun } from './scratch.ts';
import { presenceId, SUBSCRIBER_GONE } from './sql.ts';
import { Sweeper } from './sweep.ts';
import { transact } from './transaction.ts';

/** What a PostgreSQL driver is built with (src/options/postgres.ts checks the user's part). */
export interface PostgresDriverOptions {
  /** Where to connect, when no pool is given. */
  url?: string | undefined;
  /** A user's node-postgres Pool: used for commands and left open on close. */
  pool?: Pool | undefined;
  /** The LISTEN connection's URL, when commands go through PgBouncer in transaction mode. */
  listenUrl?: string | undefined;
  names: PgNames;
  /** Create the schema and table when missing (default); false: fail with a hint instead. */
  migrate: boolean;
  tracking: boolean;
  commandTimeout: number;
  canaryKey: () => string;
}

/** Retries of a transaction PostgreSQL chose as a deadlock victim (extra keys a run locked late). */
const DEADLOCK_RETRIES = 3;

/**
 * leasehold on PostgreSQL (docs/postgres.md). Each script call is one transaction of two round
 * trips on a pooled connection: lock the script's keys (transaction-scoped advisory locks, in one
 * order) and read their rows with the server's clock; run the very Lua script Redis runs, in the
 * memory backend's VM, over those rows (src/postgres/scratch.ts); write back what changed,
 * NOTIFY the change, COMMIT. Every primitive, fencing token and inspection view comes through
 * unchanged. Notifications: one dedicated connection LISTENs, every instance hears every change
 * (its own are skipped, as NOLOOP does), and local timers stand in for Redis's expiry pushes
 * (src/postgres/expiry.ts). The same canary as Redis proves the path at connect and after every
 * reconnect of the listener; without it, leasehold polls.
 */
export class PostgresDriver implements Driver {
  readonly #o: PostgresDriverOptions;
  readonly #writer = newToken();
  readonly #canary = new Canary();
  readonly #expiry = new ExpiryTimers((key) => this.#handlers.invalidate([key]));
  #pool: Pool | undefined;
  #listener: Listener | undefined;
  #listening = false;
  #lua: LuaScripts | undefined;
  #handlers: DriverHandlers = NO_HANDLERS;
  /** Subscriptions for direct grants, by channel (one per Leasehold instance). */
  readonly #subs = new Map<string, SubscriptionHandlers>();
  #proof: TrackingProof | undefined;
  #closed = false;
  /** Rejected by destroy(): pg's pool keeps waiting acquisitions past end(), so calls race it. */
  #cutAll: (error: Error) => void = () => {};
  readonly #cut = new Promise<never>((_, reject) => {
    this.#cutAll = reject;
  });
  readonly #sweeper = new Sweeper(
    (work) => this.#with(work),
    () => this.#o.names.qualified,
  );
  #version = '';
  /** The server's start time at the last check: a new one means it restarted. */
  #started = '';

  constructor(options: PostgresDriverOptions) {
    this.#o = options;
  }

  get tracking(): boolean {
    return this.#listening && this.#proof?.ok === true;
  }

  get proof(): TrackingProof | undefined {
    return this.#proof;
  }

  /**
   * Direct grants (src/engine/grants.ts) need PUBLISH's count of the subscribers reached. A
   * subscriber here holds a session advisory lock on its channel's presence id, on the listening
   * connection, for as long as it listens; a release counts it with a shared transaction lock
   * that the subscriber's lock refuses (one round trip more for the release, none for the waiter,
   * who holds the lock on the grant's NOTIFY). Only in tracking mode, where there is a listener.
   */
  get subscribe(): ((channel: string, handlers: SubscriptionHandlers) => Subscription) | undefined {
    if (!this.#o.tracking) return undefined;
    return (channel, handlers) => {
      this.#subs.set(channel, handlers);
      void this.#present(channel, handlers);
      return {
        close: async () => {
          this.#subs.delete(channel);
          const listener = this.#listener;
          if (listener?.up === true) {
            await listener
              .query(`SELECT pg_advisory_unlock(${presenceId(this.#o.names, channel)})`)
              .catch(() => {});
          }
        },
      };
    };
  }

  /** Takes the presence lock of `channel` on the listener, then says the subscription is up. */
  async #present(channel: string, handlers: SubscriptionHandlers): Promise<void> {
    const listener = this.#listener;
    if (listener === undefined || !this.#listening) return; // `up` follows the listener's return
    try {
      await listener.query(`SELECT pg_advisory_lock(${presenceId(this.#o.names, channel)})`);
    } catch {
      return; // the listener dropped: its return subscribes again
    }
    if (this.#subs.get(channel) === handlers && this.#listening) handlers.up();
  }

  setHandlers(handlers: DriverHandlers): void {
    this.#handlers = handlers;
  }

  async connect(): Promise<void> {
    const pg = await loadPg();
    const o = this.#o;
    if (o.pool === undefined) {
      const pool = new pg.Pool({
        connectionString: o.url,
        max: 10,
        connectionTimeoutMillis: o.commandTimeout,
        idleTimeoutMillis: 10_000,
        allowExitOnIdle: true,
      });
      // An idle connection that fails (a server restart) is reported here; unheard, it would
      // crash the process. The next call opens a fresh one.
      pool.on('error', () => {});
      this.#pool = pool;
    } else this.#pool = o.pool;
    const state = await this.#with(async (query) => {
      const found = await schemaState(query, o.names);
      if (found.standby) throw standbyError();
      if (!found.table) {
        if (!o.migrate) {
          throw new Error(
            `the table ${o.names.qualified} does not exist: run \`leasehold migrate --postgres URL\` (docs/postgres.md) or leave postgres.migrate on`,
          );
        }
        await migrate(query, o.names);
      }
      return found;
    });
    this.#version = state.version;
    this.#started = state.started;
    this.#lua = await LuaScripts.load();
    if (!o.tracking) return;
    const listener = new Listener(
      () => new pg.Client(listenConfig(this.#o)),
      o.names.channel,
      {
        notification: (payload) => this.#heard(payload),
        down: (error) => {
          this.#listening = false;
          for (const sub of this.#subs.values()) sub.down();
          this.#handlers.disconnected(error);
          this.#setProof({
            ok: false,
            reason: new Error(`notifications lost: ${error.message}`, { cause: error }),
          });
        },
        up: () => {
          this.#listening = true;
          for (const [channel, sub] of this.#subs) void this.#present(channel, sub);
          void this.#rearm();
        },
      },
      o.commandTimeout,
    );
    this.#listener = listener;
    await listener.start();
    this.#listening = true;
    await this.#arm();
  }

  async close(force = false): Promise<void> {
    if (this.#closed && !force) return;
    this.#closed = true;
    this.#cut.catch(() => {});
    if (force) this.#cutAll(new ConnectionClosedError());
    if (!force) await this.#canary.settle(1_000);
    this.#expiry.clear();
    // A short-lived process sweeps too: on its way out, once, bounded by commandTimeout.
    if (this.#sweeper.wrote && this.#lua !== undefined && !force)
      await timed(this.#sweeper.sweep(), 1_000).catch(() => {});
    await this.#listener?.close(force);
    const pool = this.#pool;
    if (pool !== undefined && this.#o.pool === undefined)
      await closeWithin(
        () => pool.end(),
        () => cutPool(pool),
        force ? 0 : undefined,
      );
  }

  eval(call: ScriptCall): Promise<unknown> {
    const lua = this.#lua;
    if (lua === undefined) return Promise.reject(this.#notOpen());
    return this.#run(call.keys, (host) => lua.run(call.script.source, call.keys, call.args, host), true);
  }

  async evalMany(calls: readonly ScriptCall[]): Promise<unknown[]> {
    const settled = await Promise.allSettled(calls.map((call) => this.eval(call)));
    return settled.map((s) => (s.status === 'fulfilled' ? s.value : asError(s.reason)));
  }

  /** A plain command (src/postgres/commands.ts). */
  async command(args: readonly string[]): Promise<unknown> {
    if (this.#lua === undefined || this.#closed) throw this.#notOpen();
    return plainCommand(args, {
      with: (work) => this.#with(work),
      run: (keys, body) => this.#run(keys, body, false),
      names: this.#o.names,
      writer: this.#writer,
      version: this.#version,
    });
  }

  #notOpen(): Error {
    return fromPostgres(new Error('the PostgreSQL driver is not connected'));
  }

  #with<T>(work: (query: Query) => Promise<T>): Promise<T> {
    const pool = this.#pool;
    if (pool === undefined) return Promise.reject(this.#notOpen());
    const call = withConnection(pool, this.#o.commandTimeout, work, () => void this.#listener?.check());
    return Promise.race([call, this.#cut]).then(
      (value) => {
        if (!this.#listening) this.#listener?.nudge();
        return value;
      },
      (error: unknown) => {
        throw asReply(error);
      },
    );
  }

  /**
   * One call as one transaction; a deadlock victim (SQLSTATE 40P01) runs again. A grant's
   * subscriber is assumed present and checked at commit (two round trips); when it was gone, the
   * call runs again counting subscribers first (three), so PUBLISH's reply is exact either way.
   */
  async #run<T>(
    keys: readonly string[],
    body: (host: Host) => T,
    statuses: boolean,
    writer = this.#writer,
  ): Promise<T> {
    let assume = true;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#with((query) => this.#transact(query, keys, body, statuses, writer, assume));
      } catch (error) {
        const code = sqlState(error);
        if (code === SUBSCRIBER_GONE && assume) assume = false;
        else if (code !== '40P01' || attempt >= DEADLOCK_RETRIES) throw error;
      }
    }
  }

  async #transact<T>(
    query: Query,
    keys: readonly string[],
    body: (host: Host) => T,
    statuses: boolean,
    writer: string,
    assume: boolean,
  ): Promise<T> {
    const call = {
      names: this.#o.names,
      timeout: this.#o.commandTimeout,
      keys,
      body,
      statuses,
      writer,
      assume,
    };
    const { run, loaded, now } = await transact(query, call);
    this.#committed(loaded, run, now / 1000);
    if (run.upserts.length + run.deletes.length > 0) this.#sweeper.written();
    if (!run.outcome.ok) throw run.outcome.error;
    return run.outcome.reply;
  }

  /** Arms the local expiry timers for every key the transaction saw, as it left them. */
  #committed(loaded: ReadonlyMap<string, Row | null>, run: ScratchRun<unknown>, nowMs: number): void {
    if (!this.#o.tracking) return;
    const expireAt = new Map<string, number | null>();
    for (const [key, row] of loaded) expireAt.set(key, row?.expireAt ?? null);
    for (const key of run.deletes) expireAt.set(key, null);
    for (const row of run.upserts) expireAt.set(row.key, row.expireAt);
    for (const [key, at] of expireAt) this.#expiry.watch(key, at === null ? undefined : at - nowMs);
  }

  /** A notification: a change by another instance (or the canary), or a forwarded PUBLISH. */
  #heard(payload: string): void {
    let message: { w?: string; k?: string[] | null; p?: unknown };
    try {
      message = JSON.parse(payload) as typeof message;
    } catch {
      return; // not ours: somebody else NOTIFYs on the channel
    }
    if (Array.isArray(message.p)) {
      // A PUBLISH (a direct grant): for this instance's subscriber of that channel, own writes too.
      const [channel, text] = message.p as [unknown, unknown];
      if (typeof channel === 'string' && typeof text === 'string') this.#subs.get(channel)?.message(text);
      return;
    }
    if (message.w === this.#writer || message.k === undefined) return;
    const keys = message.k;
    if (keys === null) this.#expiry.clear();
    else for (const key of keys) this.#expiry.forget(key);
    this.#canary.hear(keys);
    this.#handlers.invalidate(keys);
  }

  /**
   * After the listener came back: whether the server restarted meanwhile (a crash may have lost
   * the last commits: every lease on it is lost, as on a Redis that restarted), then #arm.
   */
  async #rearm(): Promise<void> {
    const since = monotonic();
    let restarted = false;
    try {
      const [result] = await this.#with((query) =>
        query('SELECT pg_postmaster_start_time()::text AS started'),
      );
      const started = (result?.rows[0] as { started?: string } | undefined)?.started;
      restarted = started !== undefined && started !== this.#started;
      if (started !== undefined) this.#started = started;
    } catch (error) {
      // The server went away again: the listener's next drop reports it.
      this.#handlers.disconnected(asError(error));
      return;
    }
    if (this.#closed) return;
    const detail =
      'PostgreSQL restarted (pg_postmaster_start_time() changed): a crash may have lost its last commits';
    await this.#arm(restarted ? { restarted, since, detail } : undefined);
  }

  /** After (re)listening: the core re-checks everything, then the canary proves the path. */
  async #arm(info?: ResetInfo): Promise<void> {
    this.#handlers.reset(info);
    const port: CanaryPort = {
      eval: (call) => this.eval(call),
      poke: async (keys) => {
        await this.#run(keys, (host) => host(['DEL', ...keys]), false, `canary:${newToken()}`);
      },
    };
    const proof = await this.#canary.prove(port, this.#o.canaryKey());
    if (this.#closed || !this.#listening) return;
    this.#setProof(proof);
  }

  #setProof(proof: TrackingProof): void {
    this.#proof = proof;
    this.#handlers.proven(proof);
  }
}
