import { monotonic } from '../base/clock.ts';
import { preloadScripts } from '../scripts/index.ts';
import { Canary, type CanaryPort, defaultCanaryKey, refused } from './canary.ts';
import {
  asError,
  type DriverHandlers,
  isBcastOverlap,
  isErrorReply,
  type TrackingProof,
  trackingOn,
} from './types.ts';

/** What a driver lends the arm sequence: its command connection and its side of tracking. */
export interface ArmSteps {
  /** One command on the command connection. */
  send(args: string[]): Promise<unknown>;
  /** Recovery.identify on the command connection: true when the server restarted. */
  identify(): Promise<boolean>;
  /**
   * The client id pushes go to (REDIRECT): the driver's other connection, or undefined when the
   * command connection takes its own pushes (RESP3). Absent in polling mode: nothing to track.
   */
  redirect?: () => Promise<string | undefined>;
  /** Broadcast prefixes (the inspection views), for CLIENT TRACKING ... BCAST. */
  bcast: readonly string[] | undefined;
  /** The canary's script and poke (a delete from another connection), and its key base. */
  canary: CanaryPort;
  canaryKey: string;
  handlers: DriverHandlers;
  closed(): boolean;
}

/**
 * The one sequence every driver runs after each (re)connect: identify the server (a restart
 * loses the leases behind it), enable tracking, load the scripts, reset the core (which re-checks
 * every holder and wakes every waiter), and then prove with the canary that pushes arrive. A
 * refusal of CLIENT TRACKING (an ACL without client|tracking, a proxy without CLIENT) is a
 * failed proof, not a dropped connection: leasehold then polls. The core is reset before the
 * proof, so that nothing waits for it. A proof overtaken by a newer sequence (a reconnect
 * meanwhile) is dropped.
 */
export class Arm {
  readonly canary = new Canary();
  #runs = 0;
  #proof: TrackingProof | undefined;

  /** The last proof's verdict; undefined in polling mode and before the first one. */
  get proof(): TrackingProof | undefined {
    return this.#proof;
  }

  async run(steps: ArmSteps): Promise<void> {
    const run = ++this.#runs;
    const since = monotonic();
    let proof: TrackingProof | undefined;
    try {
      const restarted = await steps.identify();
      if (steps.redirect !== undefined) proof = await this.#track(steps, steps.redirect);
      await preloadScripts(steps.send);
      steps.handlers.reset(restarted ? { restarted, since } : undefined);
    } catch (error) {
      steps.handlers.disconnected(asError(error));
      return;
    }
    if (steps.redirect === undefined) return;
    proof ??= await this.canary.prove(steps.canary, steps.canaryKey);
    if (run !== this.#runs || steps.closed()) return;
    this.#proof = proof;
    steps.handlers.proven(proof);
  }

  /** CLIENT TRACKING ON; a refusal is returned as the failed proof. */
  async #track(
    steps: ArmSteps,
    redirect: () => Promise<string | undefined>,
  ): Promise<TrackingProof | undefined> {
    const id = await redirect();
    // BCAST prefixes cannot be declared twice on a connection ("overlaps with an existing
    // prefix"), and this runs again after every reconnect: start afresh.
    if (steps.bcast !== undefined) await steps.send(['CLIENT', 'TRACKING', 'OFF']).catch(() => {});
    try {
      await steps.send(trackingOn(id, steps.bcast));
      return undefined;
    } catch (error) {
      if (!isErrorReply(error)) throw error;
      // A concurrent arm already declared the same BCAST prefixes: its tracking stands.
      if (steps.bcast !== undefined && isBcastOverlap(error)) return undefined;
      return refused(asError(error));
    }
  }
}

/** The canary key base a driver's options name, or the default one under 'leasehold'. */
export const canaryKeyOf = (canaryKey: (() => string) | undefined): string =>
  (canaryKey ?? defaultCanaryKey('leasehold'))();
