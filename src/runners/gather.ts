/** One node's answer: its value, its error, or nothing yet (still in flight at the deadline). */
export type NodeResult<T> = { ok: true; value: T } | { ok: false; error: unknown } | undefined;

/**
 * Waits for per-node promises until `decided(results)` says the outcome is known (a majority
 * agreed, or a majority can no longer agree) or `timeout` passes, whichever comes first. A hung
 * node therefore never stalls the caller; its slot stays `undefined`.
 */
export function gather<T>(
  promises: readonly Promise<T>[],
  decided: (results: readonly NodeResult<T>[]) => boolean,
  timeout: number,
): Promise<NodeResult<T>[]> {
  const results: NodeResult<T>[] = promises.map(() => undefined);
  return new Promise((resolve) => {
    let done = false;
    let pending = promises.length;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve([...results]);
    };
    const timer = setTimeout(finish, Math.max(0, timeout));
    timer.unref();
    promises.forEach((promise, i) => {
      promise
        .then(
          (value) => {
            results[i] = { ok: true, value };
          },
          (error: unknown) => {
            results[i] = { ok: false, error };
          },
        )
        .finally(() => {
          pending -= 1;
          if (pending === 0 || decided(results)) finish();
        });
    });
    if (promises.length === 0) finish();
  });
}
