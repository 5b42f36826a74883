import type { Socket } from 'node:net';

/**
 * Most commands one write carries. Fewer writes cost fewer system calls on both sides; a turn's
 * commands all held back for one write leave Redis idle while this process issues them, then
 * this process idle while Redis runs them. Batches of 8 let the two overlap: with 64 acquisitions
 * in flight on ioredis, 1 write per turn and 8 per turn went 13,100-21,000 and 22,300-25,500
 * pairs/s, paired round by round (docs/benchmarks.md, "Writes per turn").
 */
const PER_WRITE = 8;

/**
 * Gathers the commands written to one socket during one turn of the event loop into a few
 * writes. ioredis writes every command at once, one `write` system call each; with 64
 * acquisitions in flight that was a third of the process's CPU on a virtual machine where system
 * calls are dear, and Redis read the commands one by one too. The first write of a turn corks
 * the socket; every PER_WRITE commands, and at the end of the turn (process.nextTick runs after
 * the current callback and its promise jobs), it is uncorked: the same commands, in the same
 * order, a few microseconds later. node-redis writes a turn's commands together by itself.
 */
export class TickWrites {
  #corked: Socket | undefined;
  #held = 0;
  readonly #uncork = () => {
    const socket = this.#corked;
    this.#corked = undefined;
    socket?.uncork();
  };

  /** Call before writing one command to `socket`. */
  before(socket: Socket | undefined): void {
    const corked = this.#corked;
    if (corked !== undefined) {
      if (corked !== socket || ++this.#held < PER_WRITE) return;
      // Send what this turn has gathered so far, and gather the next ones.
      this.#held = 0;
      corked.uncork();
      corked.cork();
      return;
    }
    if (socket === undefined || typeof socket.cork !== 'function') return;
    this.#corked = socket;
    this.#held = 0;
    socket.cork();
    process.nextTick(this.#uncork);
  }
}
