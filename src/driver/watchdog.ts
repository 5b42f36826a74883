import { monotonic } from '../base/clock.ts';

/** The default `commandTimeout`: how long a connection may leave commands unanswered. */
export const DEFAULT_COMMAND_TIMEOUT = 5_000;

/**
 * Notices a connection that stopped answering: commands (or a handshake) outstanding and no reply
 * for `limit` ms. A Redis that stalls (a long fork, a swapping host, SIGSTOP) or a network that
 * black-holes packets while the TCP connection stays open leaves every call pending for as long
 * as the outage lasts, up to the ~15 minutes TCP takes to give up; the driver that owns the
 * connection abandons it instead (src/driver/recovery.ts), so that its calls fail and it reconnects.
 *
 * Replies come back in the order commands were sent, so "no reply for `limit` ms while something
 * is outstanding" is "the oldest command waited `limit` ms": one counter and one timestamp, no
 * timer per command. The one timer runs only while something is outstanding.
 */
export class Watchdog {
  readonly limit: number;
  readonly #onStall: (waited: number) => void;
  #outstanding = 0;
  /** Monotonic time of the last reply, or of the send that started an outstanding stretch. */
  #since = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(limit: number, onStall: (waited: number) => void) {
    this.limit = limit;
    this.#onStall = onStall;
  }

  /** A command (or a handshake) went out. */
  sent(): void {
    if (this.#outstanding++ === 0) {
      this.#since = monotonic();
      this.#arm(this.limit);
    }
  }

  /** A reply (or an error) came back for one of them. */
  answered(): void {
    if (this.#outstanding === 0) return;
    this.#outstanding -= 1;
    this.#since = monotonic();
  }

  /** The connection is gone (dropped, or abandoned): whatever was outstanding will not be answered. */
  clear(): void {
    this.#outstanding = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => this.#check(), Math.max(1, Math.ceil(ms)));
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#outstanding === 0) return;
    const waited = monotonic() - this.#since;
    if (waited < this.limit) {
      this.#arm(this.limit - waited);
      return;
    }
    this.clear();
    this.#onStall(waited);
  }
}

/** The error every call outstanding on an abandoned connection fails with. */
export function stallError(waited: number, limit: number): Error {
  return new Error(
    `no reply from Redis for ${Math.round(waited)} ms (commandTimeout ${limit} ms): ` +
      'the connection was dropped and is being re-established',
  );
}
