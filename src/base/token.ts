import { randomBytes } from 'node:crypto';

// Tokens are cut from a pool refilled 4 KiB at a time, so that an acquisition does not cost a
// call into the OS's random source of its own. Every token is still 128 fresh bits from the OS's
// CSPRNG, never reused.
const TOKEN_BYTES = 16;
let pool: Buffer = Buffer.alloc(0);
let offset = 0;
let source: (size: number) => Buffer = randomBytes;

/**
 * Where tokens' bytes come from: the OS's CSPRNG, unless a deterministic simulation (test/sim/)
 * puts a seeded source in its place for one run; `undefined` puts the CSPRNG back. Either way
 * the pool starts afresh.
 */
export function useTokenSource(next: ((size: number) => Buffer) | undefined): void {
  source = next ?? randomBytes;
  pool = Buffer.alloc(0);
  offset = 0;
}

/** A fresh 128-bit owner token from the OS's CSPRNG. */
export function newToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = source(TOKEN_BYTES * 256);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
