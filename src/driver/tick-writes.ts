import type { Socket } from 'node:net';

/**
 * Gathers the commands written to one socket during one turn of the event loop into one write.
 * ioredis writes every command at once, one `write` system call each; with 64 acquisitions in
 * flight that was a third of the process's CPU on a virtual machine where system calls are
 * dear, and Redis read the commands one by one too. Corking the socket until the end of the
 * turn (process.nextTick runs after the current callback and its promise jobs) sends what the
 * turn produced in one `writev`: the same commands, in the same order, a few microseconds later.
 * node-redis already writes this way. Figures: docs/benchmarks.md, "Writes per turn".
 */
export class TickWrites {
  #corked: Socket | undefined;
  readonly #uncork = () => {
    const socket = this.#corked;
    this.#corked = undefined;
    socket?.uncork();
  };

  /** Call before writing to `socket`: the first write of a turn corks it until the turn ends. */
  before(socket: Socket | undefined): void {
    if (this.#corked !== undefined || socket === undefined || typeof socket.cork !== 'function') return;
    this.#corked = socket;
    socket.cork();
    process.nextTick(this.#uncork);
  }
}
