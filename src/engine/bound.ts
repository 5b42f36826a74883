import { after } from '../base/timer.ts';
import { LockTimeoutError } from '../errors.ts';

/**
 * An acquire's own limits (its `timeout`, its `signal`) around its first attempt, which goes out
 * before any wait exists (Engine.acquire): the caller's promise ends when either does, and the
 * attempt, which cannot be called back, settles on its own later (`ended` says so, for its
 * caller to undo a lease it got too late). Made only for an acquire with a finite timeout or a
 * signal: the default (Infinity, none) races nothing.
 */
export class Bound {
  /** The timeout ran out or the signal aborted before the attempt settled. */
  ended = false;
  readonly #name: string;
  readonly #timeout: number;
  readonly #signal: AbortSignal | undefined;

  constructor(name: string, timeout: number, signal: AbortSignal | undefined) {
    this.#name = name;
    this.#timeout = timeout;
    this.#signal = signal;
  }

  /** `attempt`'s outcome, or the timeout's LockTimeoutError or the signal's reason if first. */
  race<T>(attempt: Promise<T>): Promise<T> {
    const signal = this.#signal;
    return new Promise<T>((resolve, reject) => {
      let cancel: (() => void) | undefined;
      const end = (error: unknown): void => {
        if (this.ended) return;
        this.ended = true;
        cancel?.();
        reject(error);
      };
      const onAbort = () => end(signal?.reason);
      // A timeout of 0 is one attempt, however long it takes: no timer (as Queues.wait).
      if (this.#timeout > 0) {
        cancel = after(this.#timeout, () => end(new LockTimeoutError(this.#name, this.#timeout)), {
          ref: true,
        });
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (): boolean => {
        if (this.ended) return false;
        cancel?.();
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      attempt.then(
        (value) => settle() && resolve(value),
        (error: unknown) => settle() && reject(error),
      );
    });
  }
}
