/** One lock held through a contender library. */
export interface Held {
  /**
   * Aborts when the library tells its user the lock is lost (lease.signal, the `using()` signal,
   * `onLockLost`). A library that never reports loss leaves it pending forever.
   */
  readonly signal: AbortSignal;
  /** Releases the lock (and stops any automatic extension). */
  release(): Promise<void>;
}

export interface AcquireOptions {
  /** Lock validity requested from the library, ms. */
  ttl: number;
  /** Gives up waiting; the adapter rejects with `signal.reason` at the library's next opportunity. */
  signal?: AbortSignal;
}

/** A connected client of one contender (one process may open several). */
export interface ContenderClient {
  /** Waits until the lock is held, re-calling the library's acquire when its own retry budget runs out. */
  acquire(name: string, options: AcquireOptions): Promise<Held>;
  /**
   * Takes the lock over from its holder the way this library's users would: leasehold's
   * `forceAcquire`; for a library without one, undefined (the scenario then overwrites the key).
   */
  forceAcquire?(name: string, ttl: number): Promise<Held>;
  close(): Promise<void>;
}

/** What the report says about a contender: library, versions, how it was used, its settings. */
export interface ContenderInfo {
  id: string;
  label: string;
  library: string;
  version: string;
  client: string;
  clientVersion: string;
  /** The API used, as its README recommends. */
  api: string;
  /** How the holder learns of loss. */
  lossSignal: string;
  /** How a caller waits for a held lock. */
  waiting: string;
  /** Effective settings (library defaults, read back from the library where it exposes them). */
  settings: Record<string, unknown>;
  /** Set when the contender cannot run here; the scenarios then skip it and the report says why. */
  unavailable?: string;
}

export interface Contender {
  readonly id: string;
  /**
   * leasehold as built from another commit (bench --baseline=<commit>): measured only when the run
   * names a baseline, never by default.
   */
  readonly baseline?: true;
  /** Only these scenarios run it (bench/index.ts); every scenario when undefined. */
  readonly scenarios?: readonly string[];
  /** Describes the contender; `ttl` is the value the scenarios pass, recorded next to the defaults. */
  info(): Promise<ContenderInfo>;
  connect(url: string): Promise<ContenderClient>;
  /**
   * The same contender on a Redis Cluster (bench/cluster.ts), through the library's own Cluster
   * support; undefined when the library has none.
   */
  connectCluster?(rootNodes: readonly string[]): Promise<ContenderClient>;
  /**
   * The Redis keys that carry the lock's expiry (what an external DEL or a takeover SET targets).
   * Undefined: the scenario discovers them by scanning for the lock name.
   */
  keyOf?(name: string): string;
}
