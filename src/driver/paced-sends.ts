/**
 * Commands handed to node-redis for the first of its writes in a busy stretch, doubling with each
 * further write while commands keep waiting, up to MAX_WRITE: the same 8, 16, 32, 64 as TickWrites
 * gives ioredis (docs/benchmarks-history.md, "Writes per turn", has the figures).
 */
const PER_WRITE = 8;
const MAX_WRITE = 64;

/**
 * Hands commands to a node-redis client a few per write, in the order they were issued. node-redis
 * writes everything issued before its next `setImmediate` in one write: with 64 acquisitions
 * started in one turn, Redis idles while this process issues them, then this process idles while
 * Redis runs them. Here the first PER_WRITE commands go to the client at once (no delay for a
 * caller that issues few); later ones wait in a queue and are handed over one turn of the event
 * loop apart, right after the client's write of the ones before, so that Redis runs each write
 * while this process issues the next and reads the replies in between. Each further write of a
 * busy stretch carries twice as many as the one before (8, 16, 32, 64): Redis starts as early,
 * and the stretch costs 4 system calls on each side instead of 8 (a write is dear on a virtual
 * machine).
 *
 * A batch (`sendBatch`, the renewer's extensions) is one unit: it goes to the client whole, to be
 * written in one piece as before, and only after everything issued ahead of it. A command the
 * client refuses at once (offline) schedules no write there, so the next write may carry more
 * than PER_WRITE: the count is a pace, never a condition for sending.
 */
export class PacedSends {
  /** Units handed to the client since its last write (a batch counts as a whole write). */
  #handed = 0;
  /** How many the current write may carry (PER_WRITE, doubled per write of a busy stretch). */
  #limit = PER_WRITE;
  /** Sends waiting for their turn, oldest first, from `#head` on. */
  #held: Held[] = [];
  #head = 0;

  /** `send` (which hands one command to the client) runs now, or when its turn comes. */
  send<T>(send: () => Promise<T>): Promise<T> {
    if (this.#head === this.#held.length && this.#handed < this.#limit) return this.#handOver(send, 1);
    return this.#hold(send, 1);
  }

  /** `send` hands any number of commands to the client, all to go out in one write. */
  sendBatch<T>(send: () => Promise<T>): Promise<T> {
    if (this.#head === this.#held.length) return this.#handOver(send, PER_WRITE);
    return this.#hold(send, PER_WRITE);
  }

  #handOver<T>(send: () => Promise<T>, units: number): Promise<T> {
    let promise: Promise<T>;
    try {
      promise = send();
    } catch (error) {
      // As a held send would: the caller gets a rejection either way.
      promise = Promise.reject(error);
    }
    // After send(): the client schedules its write there, and #next must run after that write.
    if (this.#handed === 0) setImmediate(this.#next);
    this.#handed += units;
    return promise;
  }

  #hold<T>(send: () => Promise<T>, units: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#held.push({ units, send, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** The client has written what it was handed: hand it the next ones. */
  readonly #next = (): void => {
    this.#handed = 0;
    const held = this.#held;
    // A turn that finds nothing waiting ends the busy stretch: the next one starts at PER_WRITE.
    this.#limit = this.#head < held.length ? Math.min(this.#limit * 2, MAX_WRITE) : PER_WRITE;
    while (this.#head < held.length && this.#handed < this.#limit) {
      const { units, send, resolve, reject } = held[this.#head++]!;
      // A throw would surface in this setImmediate, outside any caller: reject instead.
      try {
        send().then(resolve, reject);
      } catch (error) {
        reject(error);
      }
      if (this.#handed === 0) setImmediate(this.#next);
      this.#handed += units;
    }
    if (this.#head === held.length) {
      this.#held = [];
      this.#head = 0;
    }
  };
}

/** A send waiting for its turn, and how to settle its caller's promise. */
interface Held {
  readonly units: number;
  readonly send: () => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}
