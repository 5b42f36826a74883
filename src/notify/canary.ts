import { settledWithin, within } from '../driver/timeouts.ts';
import type { ScriptCall, TrackingProof } from '../driver/types.ts';
import { monotonic } from '../engine/clock.ts';
import { newToken } from '../engine/context.ts';
import { scripts } from '../scripts/index.ts';

/** How long a canary waits for its push after the write that should cause it. */
export const CANARY_TIMEOUT = 1_000;

/** The two canary keys of one proof (same hash tag: one Cluster slot). */
export const canaryKeys = (base: string) => ({ read: `${base}:read`, declared: `${base}:declared` });

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
  read: string;
  declared: string;
  heardDeclared: boolean;
  heard: () => void;
}

/**
 * Proves that notifications work end to end for one tracked connection: a script reads a canary
 * key (as every lock script ends with a read), another connection deletes it, and the push must
 * arrive within CANARY_TIMEOUT. A proxy that drops pushes, a server that refuses or changed
 * tracking, or an ACL that denies it all fail the proof, and leasehold then polls instead of
 * waiting for pushes that never come. A second declared-only key tells the tracking rule.
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
        else if (key === p.read) p.heard();
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
      pending = { read, declared, heardDeclared: false, heard: resolve };
    });
    this.#pending.set(read, pending!);
    try {
      await port.eval({ script: scripts.canary, keys: [read, declared], args: ['60000'] });
      await port.poke([declared, read]);
      await within(heard, CANARY_TIMEOUT).catch(() => {
        throw new Error(`no invalidation push within ${CANARY_TIMEOUT} ms of a write to a tracked key`);
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
      this.#pending.delete(read);
    }
  }
}

/** The proof of a connection whose CLIENT TRACKING the server refused. */
export function refused(error: Error): TrackingProof {
  return { ok: false, reason: new Error(`CLIENT TRACKING refused: ${error.message}`, { cause: error }) };
}
