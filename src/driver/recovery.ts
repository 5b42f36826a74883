import { stallError, Watchdog } from './watchdog.ts';

/**
 * What a one-node driver keeps to give up on its command connection when it stops answering, and
 * to tell that connection's calls from the next one's:
 *
 * - every command goes through `call()`, which the Watchdog counts;
 * - a connection that drops by itself, or that the driver abandons after `commandTimeout` without
 *   a reply, starts a new generation: replies and errors of the old one no longer count, and the
 *   calls abandoned fail with the stall error (a RedisUnavailableError once the runner wraps it);
 * - a user's own client cannot be abandoned (it is theirs): its calls race a shared stall signal
 *   instead, which rejects them all at once;
 * - once a new connection is ready, `identify()` reads the server's run_id and client id. A run_id
 *   that changed means the server restarted, and with it the data may be gone; an unchanged one
 *   lets the driver CLIENT KILL the connections it abandoned, so that a command still buffered on
 *   one (a stalled server runs it when it wakes up) can never run after the give-backs that follow.
 *   Until those kills are confirmed, every other command waits (at most `limit`): a give-back
 *   sent ahead of them could be overtaken by the very acquisition it gives back.
 */
export class Recovery {
  readonly dog: Watchdog;
  /** Bumped whenever the command connection is gone (dropped or abandoned). */
  generation = 0;
  /** The current generation's reply handlers, made once per generation rather than per call. */
  #replies = this.#repliesFor(0);
  /** The generation abandoned last, and why: its calls fail with that reason. */
  #abandoned = -1;
  #reason: Error | undefined;
  /** For a user's client: rejected (and replaced) when the connection is abandoned. */
  #signal: Promise<never>;
  #reject: (error: Error) => void = () => {};
  /** Client ids of abandoned connections of this server run, to kill once a new one is ready. */
  #abandonedIds: number[] = [];
  #clientId: number | undefined;
  #runId: string | undefined;
  /** Set from an abandonment with connections to kill until the kills are done: other calls wait. */
  #fence: Promise<void> | undefined;
  #openFence: (() => void) | undefined;
  /** identify()'s own commands are being sent: they go ahead of the fence. */
  #identifying = false;

  constructor(limit: number, onStall: (waited: number) => void) {
    this.dog = new Watchdog(limit, onStall);
    this.#signal = this.#newSignal();
  }

  get limit(): number {
    return this.dog.limit;
  }

  /**
   * Sends one command through the watchdog. `race`: the connection is a user's, which cannot be
   * abandoned; the call settles when it is given up on all the same.
   */
  call<T>(send: () => Promise<T>, race = false): Promise<T> {
    // One then() instead of async/await: every command of every lease passes here, and each
    // await adds promises to the hot path (docs/benchmarks-history.md, "Before/after issues 22, 24 and 28").
    if (this.#fence !== undefined && !this.#identifying) {
      const fence = this.#fence;
      return fence.then(() => this.call(send, race));
    }
    const { ok, failed } = this.#replies;
    this.dog.sent();
    let sent: Promise<T>;
    try {
      sent = race ? Promise.race([send(), this.#signal]) : send();
    } catch (error) {
      sent = Promise.reject(error);
    }
    return sent.then(ok as (reply: T) => T, failed);
  }

  /**
   * call(send).then(read, fail) in one step: the hot path's commands (an acquire, a release) pay
   * one promise here instead of one per layer above. `fail` may return a retry's promise.
   */
  callThen<T>(
    send: () => Promise<unknown>,
    read: (reply: unknown) => T,
    fail: (error: unknown) => T | Promise<T>,
  ): Promise<T> {
    if (this.#fence !== undefined && !this.#identifying) {
      const fence = this.#fence;
      return fence.then(() => this.callThen(send, read, fail));
    }
    const generation = this.generation;
    this.dog.sent();
    let sent: Promise<unknown>;
    try {
      sent = send();
    } catch (error) {
      sent = Promise.reject(error);
    }
    return sent.then(
      (reply) => {
        if (generation === this.generation) this.dog.answered();
        return read(reply);
      },
      (error: unknown) => {
        if (generation === this.generation) this.dog.answered();
        return fail(generation === this.#abandoned && this.#reason !== undefined ? this.#reason : error);
      },
    );
  }

  /** What a call of `generation` does with its reply or error (see call()). */
  #repliesFor(generation: number): { ok: (reply: unknown) => unknown; failed: (error: unknown) => never } {
    return {
      ok: (reply) => {
        if (generation === this.generation) this.dog.answered();
        return reply;
      },
      failed: (error) => {
        if (generation === this.generation) this.dog.answered();
        throw generation === this.#abandoned && this.#reason !== undefined ? this.#reason : error;
      },
    };
  }

  /** The connection dropped by itself: what was outstanding fails on its own. */
  dropped(): void {
    this.generation += 1;
    this.#replies = this.#repliesFor(this.generation);
    this.dog.clear();
  }

  /** The connection is given up on after `waited` ms without a reply: returns the calls' error. */
  abandon(waited: number): Error {
    const error = stallError(waited, this.limit);
    if (this.#clientId !== undefined) {
      this.#abandonedIds.push(this.#clientId);
      this.#closeFence();
    }
    this.#clientId = undefined;
    this.cut(error);
    return error;
  }

  /**
   * The connection is known to be gone (a GLIDE client's Watch dropped: GLIDE would hold the
   * calls until it reconnects): every call outstanding, raced with `race`, fails now with `error`.
   */
  cut(error: Error): void {
    this.#abandoned = this.generation;
    this.#reason = error;
    this.generation += 1;
    this.#replies = this.#repliesFor(this.generation);
    this.dog.clear();
    this.#reject(error);
    this.#signal = this.#newSignal();
  }

  /**
   * Run on a new connection before anything else: CLIENT ID and the server's run_id, then
   * CLIENT KILL of the abandoned connections when the server is the same run (ids restart with
   * a new run and would name strangers). Resolves true when the server restarted since the last
   * connection (its data may be gone). Best effort: a server or ACL that refuses INFO or CLIENT
   * KILL only loses these refinements.
   */
  async identify(send: (args: string[]) => Promise<unknown>): Promise<boolean> {
    const first = (args: string[]) => {
      this.#identifying = true;
      try {
        return send(args).catch(() => undefined);
      } finally {
        this.#identifying = false;
      }
    };
    try {
      const [id, info] = await Promise.all([first(['CLIENT', 'ID']), first(['INFO', 'server'])]);
      const runId = /run_id:(\w+)/.exec(String(info ?? ''))?.[1];
      const previous = this.#runId;
      this.#runId = runId ?? previous;
      this.#clientId = typeof id === 'number' ? id : undefined;
      const restarted = previous !== undefined && runId !== undefined && runId !== previous;
      const stale = this.#abandonedIds.splice(0);
      if (!restarted && runId !== undefined) {
        await Promise.all(stale.map((old) => first(['CLIENT', 'KILL', 'ID', String(old)])));
      }
      return restarted;
    } finally {
      this.#openFence?.();
    }
  }

  /** Other calls wait until identify() has killed the abandoned connections, or `limit` has passed. */
  #closeFence(): void {
    if (this.#fence !== undefined) return;
    this.#fence = new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.#openFence?.(), this.limit);
      timer.unref();
      this.#openFence = () => {
        clearTimeout(timer);
        this.#fence = undefined;
        this.#openFence = undefined;
        resolve();
      };
    });
  }

  #newSignal(): Promise<never> {
    const signal = new Promise<never>((_, reject) => {
      this.#reject = reject;
    });
    signal.catch(() => {});
    return signal;
  }
}
