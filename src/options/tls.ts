/**
 * The `tls` option of `Leasehold.connect()` (and the CLI's `--tls-*` flags): which certificate
 * authorities to trust, and a client certificate, for the `rediss://` connections leasehold opens.
 */

import type { Pem, TlsOptions } from '../base/tls.ts';
import { checkKnownKeys, fail } from './check.ts';

export type { Pem, TlsOptions } from '../base/tls.ts';

const KNOWN = ['ca', 'cert', 'key', 'servername', 'rejectUnauthorized'] as const;

/** What a PEM value is, without its text: a private key must never reach an error message. */
function kind(value: unknown): string {
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

function isPem(value: unknown): value is Pem {
  return (typeof value === 'string' && value.length > 0) || (Buffer.isBuffer(value) && value.length > 0);
}

function checkPem(value: unknown, option: string): void {
  if (!isPem(value)) {
    throw new TypeError(
      `leasehold: option "${option}" must be PEM text (a non-empty string or Buffer); received ${kind(value)}`,
    );
  }
}

/**
 * Validates `tls` against the URLs leasehold would open: every one must be `rediss://`, since a
 * `redis://` URL with TLS settings is a contradiction that would otherwise silently send in clear.
 */
export function checkTls(value: unknown, urls: readonly string[], option = 'tls'): TlsOptions | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(option, 'an object', value);
  const o = value as Record<string, unknown>;
  checkKnownKeys(o, KNOWN, `"${option}"`);
  const out: TlsOptions = {};
  if (o['ca'] !== undefined) {
    const list = Array.isArray(o['ca']) ? o['ca'] : [o['ca']];
    if (list.length === 0) fail(`${option}.ca`, 'PEM text, a Buffer, or a non-empty array of them', o['ca']);
    for (const ca of list) checkPem(ca, `${option}.ca`);
    out.ca = o['ca'] as Pem | Pem[];
  }
  if (o['cert'] !== undefined) {
    checkPem(o['cert'], `${option}.cert`);
    out.cert = o['cert'] as Pem;
  }
  if (o['key'] !== undefined) {
    checkPem(o['key'], `${option}.key`);
    out.key = o['key'] as Pem;
  }
  if ((out.cert === undefined) !== (out.key === undefined)) {
    const missing = out.cert === undefined ? 'cert' : 'key';
    throw new TypeError(
      `leasehold: option "${option}.${missing}" must be given with "${option}.${missing === 'cert' ? 'key' : 'cert'}" (a client certificate needs both)`,
    );
  }
  if (o['servername'] !== undefined) {
    if (typeof o['servername'] !== 'string' || o['servername'] === '')
      fail(`${option}.servername`, 'a non-empty string', o['servername']);
    out.servername = o['servername'];
  }
  if (o['rejectUnauthorized'] !== undefined) {
    if (typeof o['rejectUnauthorized'] !== 'boolean')
      fail(`${option}.rejectUnauthorized`, 'a boolean', o['rejectUnauthorized']);
    out.rejectUnauthorized = o['rejectUnauthorized'];
  }
  for (const url of urls) {
    if (!url.startsWith('rediss://')) {
      throw new TypeError(
        `leasehold: option "${option}" needs rediss:// URLs (TLS); received it with a redis:// URL, which would connect in clear`,
      );
    }
  }
  return out;
}
