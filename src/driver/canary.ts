import { monotonic } from '../base/clock.ts';
import { settledWithin, within } from '../base/timeouts.ts';
import { newToken } from '../base/token.ts';
import { scripts } from '../scripts/index.ts';
import type { ScriptCall, TrackingProof } from './types.ts';

/** How long a canary waits for its push after the write that should cause it. */
export const CANARY_TIMEOUT = 1_000;

/**
 * The read commands the lock scripts end with to arm tracking (each script's header says which):
 * the canary proves a push for a key read with each of them, in one script as theirs are.
 */
export const ARMING_READS = ['GET', 'PTTL', 'EXISTS', 'HGET', 'ZRANGE', 'XRANGE', 'XREVRANGE'] as const;

/** The canary keys of one proof (same hash tag: one Cluster slot), in canary.lua's KEYS order. */
export const canaryKeys = (base: string) => ({
  declared: `${base}:declared`,
  read: ARMING_READS.map((command) => `${base}:${command.toLowerCase()}`),
});

/** The default canary key base: under the prefix, a tag of its own, a fresh token. */
export const defaultCanaryKey = (prefix: string) => (): string =>
  `${prefix}:{leasehold-canary}:${newToken()}`;

/** What a proof needs from a driver. */
export interface CanaryPort {
  /** Runs the script on the tracked connection. */
  eval(call: ScriptCall): Promise<unknown>;
  /** Deletes these keys, in this order, from another connection (writes of our own are NOLOOP). */
  poke(keys: readonly string[]): Promise<void>;
}

interface Pending {
  /** Read keys whose push has not come yet. */
  unheard: Set<string>;
  declared: string;
  heardDeclared: boolean;
  heard: () => void;
}

/**
 * Proves that notifications work end to end for one tracked connection: a script reads canary
 * keys with every command the lock scripts arm tracking with (ARMING_READS), another connection
 * deletes them, and a push for each must arrive within CANARY_TIMEOUT. A proxy that drops pushes,
 * a server that refuses or changed tracking (or arms some reads and not others), or an ACL that
 * denies it all fail the proof, and leasehold then polls instead of waiting for pushes that never
 * come. A declared-only key tells the tracking rule. Every driver runs it after each (re)connect.
 */
export class Canary {
  readonly #pending = new Map<string, Pending>();
  /** Proofs in flight: close() lets them finish, so that their poke deletes the canary keys. */
  readonly #proving = new Set<Promise<TrackingProof>>();

  /**
   * For the driver's close(): waits for proofs in flight, at most `ms`. A proof runs after every
   * connect and reconnect without anyone awaiting it; closing in the middle of one cut its poke
   * off and left its two keys behind for their 60 s TTL (a model test caught it).
   */
  settle(ms: number): Promise<void> {
    if (this.#proving.size === 0) return Promise.resolve();
    return settledWithin(Promise.allSettled([...this.#proving]), ms);
  }

  /** The driver passes every push here first (canary keys are nobody else's business). */
  hear(keys: readonly string[] | null): void {
    if (keys === null || this.#pending.size === 0) return;
    for (const key of keys) {
      for (const p of this.#pending.values()) {
        if (key === p.declared) p.heardDeclared = true;
        else if (p.unheard.delete(key) && p.unheard.size === 0) p.heard();
      }
    }
  }

  prove(port: CanaryPort, base: string): Promise<TrackingProof> {
    const proof = this.#prove(port, base);
    this.#proving.add(proof);
    const done = () => this.#proving.delete(proof);
    proof.then(done, done);
    return proof;
  }

  async #prove(port: CanaryPort, base: string): Promise<TrackingProof> {
    const { read, declared } = canaryKeys(base);
    const started = monotonic();
    let pending: Pending | undefined;
    const heard = new Promise<void>((resolve) => {
      pending = { unheard: new Set(read), declared, heardDeclared: false, heard: resolve };
    });
    this.#pending.set(base, pending!);
    try {
      await port.eval({ script: scripts.canary, keys: [declared, ...read], args: ['60000'] });
      await port.poke([declared, ...read]);
      await within(heard, CANARY_TIMEOUT).catch(() => {
        const missing = ARMING_READS.filter((_, i) => pending!.unheard.has(read[i]!));
        throw new Error(
          `no invalidation push within ${CANARY_TIMEOUT} ms of a write to a key read with ${missing.join(', ')}`,
        );
      });
      return {
        ok: true,
        rule: pending!.heardDeclared ? 'declared-keys' : 'read-keys',
        ms: monotonic() - started,
      };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { ok: false, reason: new Error(`notifications unproven: ${why}`, { cause: error }) };
    } finally {
      this.#pending.delete(base);
    }
  }
}

/** The proof of a connection whose CLIENT TRACKING the server refused. */
export function refused(error: Error): TrackingProof {
  return { ok: false, reason: new Error(`CLIENT TRACKING refused: ${error.message}`, { cause: error }) };
}
