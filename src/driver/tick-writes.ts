import type { Socket } from 'node:net';

/**
 * Commands the first write of a turn carries; each further write of the same turn carries twice
 * as many as the one before, up to MAX_WRITE. Fewer writes cost fewer system calls on both sides;
 * a turn's commands all held back for one write leave Redis idle while this process issues them,
 * then this process idle while Redis runs them. Writes of 8, 16, 32, 64 let the two overlap in 4
 * system calls where writes of 8 took 8 (docs/benchmarks-history.md, "Writes per turn", has the figures).
 */
const PER_WRITE = 8;
const MAX_WRITE = 64;

/**
 * Gathers the commands written to one socket during one turn of the event loop into a few
 * writes. ioredis writes every command at once, one `write` system call each, and Redis then
 * reads them one by one: dear on a virtual machine where system calls are. A turn's first command
 * goes out at once (one in flight pays nothing: +13-21 % pairs/s at one in flight, 2026-11-29, the
 * uncontended scenario's A/B); the second corks the socket, which is uncorked after PER_WRITE
 * commands, then twice as many each time, and at the end of the turn (process.nextTick runs after
 * the current callback and its promise jobs): the same commands, in the same order, a few
 * microseconds later. node-redis writes a turn's commands together by itself, so its driver hands
 * it 8, 16, 32, 64 per write instead (paced-sends.ts).
 */
export class TickWrites {
  /** The socket this turn's first command went to, uncorked. */
  #first: Socket | undefined;
  #corked: Socket | undefined;
  #held = 0;
  /** How many the current write may carry (PER_WRITE, doubled per write of the turn). */
  #limit = PER_WRITE;
  readonly #endTurn = () => {
    const socket = this.#corked;
    this.#first = undefined;
    this.#corked = undefined;
    socket?.uncork();
  };

  /** Call before writing one command to `socket`. */
  before(socket: Socket | undefined): void {
    const corked = this.#corked;
    if (corked !== undefined) {
      if (corked !== socket || ++this.#held < this.#limit) return;
      // Send what this turn has gathered so far, and gather the next ones.
      this.#held = 0;
      this.#limit = Math.min(this.#limit * 2, MAX_WRITE);
      corked.uncork();
      corked.cork();
      return;
    }
    if (socket === undefined || typeof socket.cork !== 'function') return;
    if (this.#first === undefined) {
      // A turn's first command goes out at once: one in flight pays no cork, and Redis starts on
      // it while this process issues the rest.
      this.#first = socket;
      process.nextTick(this.#endTurn);
      return;
    }
    if (this.#first !== undefined && this.#first !== socket) return;
    this.#corked = socket;
    this.#held = 0;
    this.#limit = PER_WRITE;
    socket.cork();
    if (this.#first === undefined) process.nextTick(this.#endTurn);
  }
}
