/**
 * Most commands handed to node-redis for one of its writes: the same 8 as TickWrites gives
 * ioredis (docs/benchmarks.md, "Writes per turn", has the figures).
 */
const PER_WRITE = 8;

/**
 * Hands commands to a node-redis client at most PER_WRITE per write, in the order they were
 * issued. node-redis writes everything issued before its next `setImmediate` in one write: with
 * 64 acquisitions started in one turn, Redis idles while this process issues them, then this
 * process idles while Redis runs them. Here the first PER_WRITE commands go to the client at once
 * (no delay for a caller that issues few); later ones wait in a queue and are handed over
 * PER_WRITE at a time, one turn of the event loop apart, right after the client's write of the
 * ones before, so that Redis runs each write while this process issues the next and reads the
 * replies in between.
 *
 * A batch (`sendBatch`, the renewer's extensions) is one unit: it goes to the client whole, to be
 * written in one piece as before, and only after everything issued ahead of it. A command the
 * client refuses at once (offline) schedules no write there, so the next write may carry more
 * than PER_WRITE: the count is a pace, never a condition for sending.
 */
export class PacedSends {
  /** Units handed to the client since its last write (a batch counts as a whole write). */
  #handed = 0;
  /** Sends waiting for their turn, oldest first, from `#head` on. */
  #held: Held[] = [];
  #head = 0;

  /** `send` (which hands one command to the client) runs now, or when its turn comes. */
  send<T>(send: () => Promise<T>): Promise<T> {
    if (this.#head === this.#held.length && this.#handed < PER_WRITE) return this.#handOver(send, 1);
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
      const run = () => {
        // A throw would surface in #next's setImmediate, outside any caller: reject instead.
        try {
          send().then(resolve, reject);
        } catch (error) {
          reject(error);
        }
      };
      this.#held.push({ units, run });
    });
  }

  /** The client has written what it was handed: hand it the next ones. */
  readonly #next = (): void => {
    this.#handed = 0;
    const held = this.#held;
    while (this.#head < held.length && this.#handed < PER_WRITE) {
      const { units, run } = held[this.#head++]!;
      run();
      if (this.#handed === 0) setImmediate(this.#next);
      this.#handed += units;
    }
    if (this.#head === held.length) {
      this.#held = [];
      this.#head = 0;
    }
  };
}

interface Held {
  readonly units: number;
  readonly run: () => void;
}
