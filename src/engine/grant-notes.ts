import { monotonic } from '../base/clock.ts';
import { noteMember, notesKey } from '../base/grant-note-format.ts';
import type { ScriptCall } from '../driver/types.ts';
import type { Lease } from '../lease.ts';
import type { Runner } from '../runners/runner.ts';
import { scripts } from '../scripts/index.ts';
import type { Holding } from './held.ts';
import { ms } from './spec.ts';

/**
 * How long after a holder that waited got its lease its note goes out, if it still holds it. A
 * holder that lets go sooner (a busy handoff loop hands a lock on every millisecond) sends none:
 * sent at once, the note cost such a loop 4-5 % of its handoffs and 7-14 % on the gap's
 * median (docs/inspection.md, "Asked and granted"); inspection meanwhile says when it asked.
 */
export const NOTE_DELAY = 50;

/**
 * Grant notes of one spec's leases (src/scripts/note-granted.lua): when a holder that waited got
 * its lease, beside each key it holds. Best effort and off the caller's path: a note lost leaves
 * inspection showing when the holder asked. Notes due together go in one batch.
 */
export class GrantNotes {
  readonly #runner: Runner;
  readonly #holding: (lease: Lease) => Holding;
  /** Leases whose first note goes out at the next flush, if they are still held. */
  readonly #due = new Set<Lease>();
  #timer: NodeJS.Timeout | undefined;

  constructor(runner: Runner, holding: (lease: Lease) => Holding) {
    this.#runner = runner;
    this.#holding = holding;
  }

  /** A holder that waited got `lease` (Lease.noted set): noted NOTE_DELAY from now. */
  granted(lease: Lease): void {
    this.#due.add(lease);
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(this.#flush, NOTE_DELAY);
    this.#timer.unref();
  }

  /**
   * A renewal confirmed `lease`: its note again, so that it lives as long as the lease (a note
   * lapses a TTL after it was sent), unless one went out within a quarter of the TTL (renewals
   * are a third apart).
   */
  renewed(lease: Lease): void {
    // The first goes from the flush: a claim is due the moment a waiter long registered is
    // granted, and sending it then would note every handoff, however short.
    if (lease.noted?.sent === Number.NEGATIVE_INFINITY) return;
    const calls = this.#calls(lease, monotonic());
    if (calls.length > 0) this.#send(calls);
  }

  readonly #flush = (): void => {
    this.#timer = undefined;
    const now = monotonic();
    const calls: ScriptCall[] = [];
    for (const lease of this.#due) if (!lease.done) calls.push(...this.#calls(lease, now));
    this.#due.clear();
    if (calls.length > 0) this.#send(calls);
  };

  #calls(lease: Lease, now: number): ScriptCall[] {
    const noted = lease.noted;
    if (noted === undefined || now - noted.sent < lease.ttl / 4) return [];
    noted.sent = now;
    const { key, also } = this.#holding(lease);
    const args = [noteMember(lease.token, noted.at), ms(lease.ttl)];
    const note = (held: string): ScriptCall => ({
      script: scripts.noteGranted,
      keys: [notesKey(held)],
      args,
    });
    return also === undefined ? [note(key)] : [note(key), ...also.map(note)];
  }

  #send(calls: readonly ScriptCall[]): void {
    // In a promise job: from a timer, a runner that threw at once (closed) must not throw out.
    Promise.resolve()
      .then(() => this.#runner.release(calls))
      .catch(() => {});
  }
}
