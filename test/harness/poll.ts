import { setTimeout as sleep } from 'node:timers/promises';

export interface UntilOptions {
  /** Gives up after this long. */
  timeout: number;
  /** Pause between attempts. @default 50 */
  interval?: number;
}

/**
 * Retries `check` until it returns a value other than `undefined`/`false`, and returns that value.
 * For server state that has no event to await (gossip, elections, replication links). Errors
 * thrown by `check` count as "not yet"; the last one is reported on timeout.
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  options: UntilOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeout;
  let last: unknown = 'condition never held';
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${options.timeout} ms waiting for ${what}: ${String(last)}`);
    }
    await sleep(options.interval ?? 50);
  }
}
