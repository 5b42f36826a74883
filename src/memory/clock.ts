// The memory store's default clocks (backend.ts StoreClock): a separate file, as command-kit.ts
// imports the store's types and the store imports these.

let lastMicros = 0;

/**
 * The emulated server's clock (what TIME returns), in microseconds since the epoch: the wall
 * clock at process start plus the monotonic clock since, so that it never goes back and a test
 * that fakes `Date.now` (a client with a skewed clock) does not move it.
 */
export function serverMicros(): number {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  if (now > lastMicros) lastMicros = now;
  return lastMicros;
}

/**
 * A time on the emulated server's clock (epoch ms, as PXAT and PEXPIREAT take it) on the store's
 * monotonic clock, which its TTLs run on: a key set to expire at `epochMs` expires when TIME
 * reaches it, as on Redis, where expiry and TIME read one clock.
 */
export const monotonicAt = (epochMs: number): number => epochMs - performance.timeOrigin;
