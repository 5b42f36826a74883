import type { Driver, TrackingProof } from '../driver/types.ts';
import type { Context } from '../engine/context.ts';
import type { Engine } from '../engine/engine.ts';
import type { Dispatcher } from '../notify/dispatcher.ts';
import type { QuorumRunner } from '../runners/quorum-runner.ts';

/** What Connections needs from its instance. */
export interface ConnectionsInit {
  drivers: readonly Driver[];
  notifications: 'tracking' | 'polling' | 'auto';
  onDisconnect: 'abort' | 'reverify';
  dispatcher: Dispatcher;
  engine: Pick<Engine, 'retryGiveBacks' | 'loseWhere'>;
  /** The quorum runner (independent masters or a key majority), if any. */
  quorum: QuorumRunner | undefined;
  emit: Context['emit'];
  closing: () => boolean;
}

/**
 * An instance's connections as the lock machinery sees them: pushes to the dispatcher, a
 * reconnect re-checks everything, a dropped connection loses the leases behind it, and which
 * notification mode ('tracking' or 'polling') the canaries' proofs allow.
 */
export class Connections {
  readonly #init: ConnectionsInit;
  /** How this instance learns of changes now; announced once per change after start(). */
  #mode: 'tracking' | 'polling' = 'polling';
  #connected = false;

  constructor(init: ConnectionsInit) {
    this.#init = init;
    this.#watch();
  }

  get mode(): 'tracking' | 'polling' {
    return this.#mode;
  }

  /** The first failed canary verdict among the connections, if any. */
  failedProof(): TrackingProof | undefined {
    return this.#init.drivers.map((driver) => driver.proof).find((proof) => proof?.ok === false);
  }

  /** After connect: the first verdict on notifications; a fallback is announced (after connect() returns). */
  start(): void {
    this.#connected = true;
    this.#mode = this.#provenMode();
    if (this.#mode === 'polling' && this.#init.notifications === 'auto') {
      const reason = this.failedProof()?.reason;
      setImmediate(() => {
        if (this.#mode === 'polling' && !this.#init.closing()) {
          this.#init.emit('notifications', { mode: 'polling', reason });
        }
      });
    }
  }

  /**
   * Pushes go to the dispatcher; a reconnect re-checks everything. A dropped connection, with
   * `onDisconnect: 'abort'`, loses the leases behind it at once: in quorum mode only once fewer
   * than a majority of nodes are connected. 'disconnected' and 'reconnected' are emitted once
   * per outage of a connection, not once per failed reconnect attempt (clients report each);
   * a connection that moved to another server (a Sentinel switch) is 'reconnected' too.
   */
  #watch(): void {
    const { drivers, dispatcher, engine, emit } = this.#init;
    const majority = Math.floor(drivers.length / 2) + 1;
    const down = new Set<Driver>();
    for (const node of drivers) {
      node.setHandlers({
        invalidate: (keys) => dispatcher.invalidate(keys === null ? null : this.#logical(keys)),
        reset: (info) => {
          const outage = down.delete(node);
          // A server that restarted lost its data (unless it persists it, which leasehold does not
          // count on): one Redis cannot hold a lease behind it any more, whatever onDisconnect
          // says, and telling the holder now beats the round trip of its re-verification. A
          // quorum keeps its leases on the other nodes; its extensions put the key back.
          if (info?.restarted === true && drivers.length === 1) {
            const detail =
              info.detail ??
              'another Redis answers at this address (its run_id changed: a restart or a failover), and the keys of the leases are not to be trusted';
            engine.loseWhere(info.affects ?? (() => true), detail, info.since);
          }
          dispatcher.everything();
          engine.retryGiveBacks();
          if (outage || info?.moved === true || !this.#connected) emit('reconnected', {});
        },
        disconnected: (error, affects) => {
          if (!down.has(node)) {
            down.add(node);
            emit('disconnected', { error: error ?? new Error('the connection to Redis closed') });
          }
          if (this.#init.onDisconnect !== 'abort' || this.#init.closing()) return;
          if (drivers.length > 1 && drivers.length - down.size >= majority) return;
          const detail = `the connection to Redis was lost (${error?.message ?? 'closed'})`;
          engine.loseWhere(affects ?? (() => true), detail);
        },
        proven: () => {
          if (this.#connected) this.#settleMode();
        },
      });
    }
  }

  /**
   * A key majority's pushes name replica keys (`x:{job#7}`): the holders and waiters listen on
   * the name's key (`x:{job}`), so both go to the dispatcher. A name that itself ends in
   * `#<digits>` costs a spurious wake-up at worst (pushes are hints).
   */
  #logical(keys: readonly string[]): readonly string[] {
    const logical = this.#init.quorum?.logical;
    if (logical === undefined) return keys;
    const out = [...keys];
    for (const key of keys) {
      const name = logical(key);
      if (name !== key) out.push(name);
    }
    return out;
  }

  /**
   * Pushes are trusted when the canary proved them on the connection (one Redis, Cluster,
   * Sentinel) or on a majority of the nodes (quorum: any majority that takes a lock over shares
   * a proven node with it). A switch wakes every waiter and re-verifies every holder, so that
   * nobody keeps sleeping until a push that will not come (or keeps polling needlessly).
   */
  #settleMode(): void {
    const mode = this.#provenMode();
    if (mode === this.#mode) return;
    this.#mode = mode;
    this.#init.dispatcher.everything();
    this.#init.emit('notifications', {
      mode,
      reason: mode === 'polling' ? this.failedProof()?.reason : undefined,
    });
  }

  #provenMode(): 'tracking' | 'polling' {
    const { drivers, notifications } = this.#init;
    if (notifications === 'polling') return 'polling';
    const proven = drivers.filter((driver) => driver.tracking).length;
    const needed = drivers.length === 1 ? 1 : Math.floor(drivers.length / 2) + 1;
    return proven >= needed ? 'tracking' : 'polling';
  }
}
