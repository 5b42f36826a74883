import { after } from '../base/timer.ts';
import { ConnectionClosedError, RedisUnavailableError } from '../errors.ts';

/** What a follower reads (an election's change log), and when to look again. */
export interface FollowSource<T> {
  /** The key whose pushes (and this process's own writes, as local wakes) mean "read again". */
  readonly key: string;
  /**
   * Reads what is new since the last read. `more`: read again at once (a full batch);
   * `retryIn`: look again after this long even without a push (Infinity: only on one).
   */
  read(): Promise<{ items: readonly T[]; more: boolean; retryIn: number }>;
}

/** What the engine lends a follower: its pushes and local wakes, close(), and its pacing. */
export interface FollowPort {
  closed(): boolean;
  /** Runs `closer` on close(); returns its removal. */
  onClose(closer: () => void): () => void;
  /** Calls `wake` on a push or a local wake for `key`; returns the removal. */
  watch(key: string, wake: () => void): () => void;
  /** The delay before looking again: `retryIn` with pushes, at most retryDelay without. */
  pace(retryIn: number): number;
  retryDelay: number;
}

/**
 * The engine's second loop, beside the wait loop: not a waiter for a lease but a reader. It
 * shares the engine's pushes, local wakes and close(), and reads again on each, at the time the
 * last read names, and after retryDelay when Redis did not answer.
 */
export async function* follow<T>(
  source: FollowSource<T>,
  signal: AbortSignal | undefined,
  port: FollowPort,
): AsyncGenerator<T> {
  if (port.closed()) throw new ConnectionClosedError();
  signal?.throwIfAborted();
  let pending = true;
  let closed = false;
  let resume: (() => void) | undefined;
  const wake = () => {
    pending = true;
    resume?.();
  };
  const unwatch = port.watch(source.key, wake);
  const unclose = port.onClose(() => {
    closed = true;
    wake();
  });
  signal?.addEventListener('abort', wake);
  let cancelTimer: (() => void) | undefined;
  try {
    let sleep = Number.POSITIVE_INFINITY;
    for (;;) {
      signal?.throwIfAborted();
      if (closed) throw new ConnectionClosedError();
      if (!pending) {
        await new Promise<void>((resolve) => {
          resume = resolve;
          // The time a read names (a leader's PTTL) can exceed setTimeout's 2^31-1 ms.
          cancelTimer = after(sleep, wake);
        });
        resume = undefined;
        cancelTimer?.();
        continue;
      }
      pending = false;
      let batch: Awaited<ReturnType<FollowSource<T>['read']>>;
      try {
        batch = await source.read();
      } catch (error) {
        if (!(error instanceof RedisUnavailableError)) throw error;
        sleep = port.retryDelay;
        continue;
      }
      for (const item of batch.items) yield item;
      if (batch.more) pending = true;
      sleep = port.pace(batch.retryIn);
    }
  } finally {
    cancelTimer?.();
    unwatch();
    unclose();
    signal?.removeEventListener('abort', wake);
  }
}
