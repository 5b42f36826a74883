// Worker side of the waiters curve (bench/scenarios/scale-waiters.ts): many callers in this process wait
// for one lock name that callers in other processes hold in turn. The parent decides when the
// holder releases (notice `herd-release`), so that it can read Redis's counters around each
// handoff; a caller that released waits again only once someone else holds the lock
// (`herd-held`), so at every release exactly the other callers are waiting.
import { setMaxListeners } from 'node:events';
import type { ContenderClient, Held } from '../contenders/types.ts';
import { now } from '../lib/stats.ts';
import type { Event, HerdResult } from './protocol.ts';

interface Herd {
  stop: AbortController;
  /** Resolves the wait of the caller holding the lock here (at most one: one lock, one holder). */
  release: (() => void) | undefined;
  /** Callers that released and wait for someone else to hold the lock before queueing again. */
  aside: Set<(t: number) => void>;
}

let herd: Herd | undefined;

export async function runHerd(
  client: ContenderClient,
  options: { name: string; ttl: number; callers: number; first: boolean },
  me: number,
  send: (event: Event) => void,
): Promise<HerdResult> {
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const state: Herd = { stop, release: undefined, aside: new Set() };
  herd = state;
  const result: HerdResult = { acquisitions: 0, failed: [] };
  const { name, ttl } = options;

  const caller = async (first: Held | undefined): Promise<void> => {
    let lease = first;
    for (;;) {
      if (lease === undefined) {
        try {
          lease = await client.acquire(name, { ttl, signal: stop.signal });
        } catch (error) {
          if (!stop.signal.aborted) result.failed.push(String(error));
          return;
        }
      }
      if (stop.signal.aborted) {
        await lease.release().catch(() => {});
        return;
      }
      result.acquisitions++;
      send({ event: 'herd-acq', worker: me, t: now() });
      await new Promise<void>((resolve) => {
        state.release = resolve;
      });
      state.release = undefined;
      const released = now();
      // Armed before the release is sent: any acquisition reported from here on is someone else's.
      const aside = new Promise<void>((resolve) => {
        const listener = (t: number) => {
          if (t > released) {
            state.aside.delete(listener);
            resolve();
          }
        };
        state.aside.add(listener);
      });
      send({ event: 'herd-rel', worker: me, t: released });
      await lease.release().catch((error: unknown) => result.failed.push(String(error)));
      lease = undefined;
      if (stop.signal.aborted) return;
      await aside;
      if (stop.signal.aborted) return;
    }
  };

  const callers: Promise<void>[] = [];
  // The first holder takes the lock before anyone waits (the parent waits for its `herd-acq`).
  if (options.first) callers.push(caller(await client.acquire(name, { ttl })));
  for (let i = 0; i < options.callers; i++) callers.push(caller(undefined));
  await Promise.all(callers);
  if (herd === state) herd = undefined;
  return result;
}

/** Handles the herd's notices; false when the notice is not one of them. */
export function herdNotice(notice: { notice: string; t?: number }): boolean {
  switch (notice.notice) {
    case 'herd-release':
      herd?.release?.();
      return true;
    case 'herd-held':
      for (const listener of [...(herd?.aside ?? [])]) listener(notice.t ?? Number.POSITIVE_INFINITY);
      return true;
    case 'herd-stop':
      if (herd !== undefined) {
        herd.stop.abort(new Error('benchmark cell over'));
        herd.release?.();
        for (const listener of [...herd.aside]) listener(Number.POSITIVE_INFINITY);
      }
      return true;
    default:
      return false;
  }
}
