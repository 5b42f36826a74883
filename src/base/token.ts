import { randomBytes } from 'node:crypto';

// Tokens are cut from a pool refilled 4 KiB at a time, so that an acquisition does not cost a
// call into the OS's random source of its own. Every token is still 128 fresh bits from the OS's
// CSPRNG, never reused.
const TOKEN_BYTES = 16;
let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh 128-bit owner token from the OS's CSPRNG. */
export function newToken(): string {
  if (offset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * 256);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
}
