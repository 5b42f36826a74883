/**
 * Errors met while connecting that retrying cannot fix: a refused or unresolvable address, or a
 * server that rejected the handshake (AUTH, ACL, a database index that does not exist). The
 * drivers fail connect() with these at once, as the cause, instead of retrying until
 * `connectTimeout` and reporting "no answer".
 */
export function isDefinitive(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_NONAME') return true;
  // A certificate the client does not trust (or not for this host) stays untrusted on retry.
  if (typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_|ERR_TLS_/.test(code)) return true;
  // A server error reply to the handshake: WRONGPASS, NOAUTH, NOPERM, ERR DB index is out of range.
  return /^(WRONGPASS|NOAUTH|NOPERM|ERR (invalid password|DB index|invalid DB index)|ERR AUTH)/i.test(
    error.message,
  );
}

/**
 * The message for a client package that is not installed (a dynamic import's
 * ERR_MODULE_NOT_FOUND), or undefined for any other error.
 */
export function missingPackage(
  error: unknown,
  pkg: 'redis' | 'ioredis' | 'iovalkey' | '@valkey/valkey-glide' | 'pg',
): string | undefined {
  const code = (error as { code?: unknown })?.code;
  // Bun reports a package it cannot resolve without Node's code.
  if (code !== 'ERR_MODULE_NOT_FOUND' && !/Cannot find (module|package)/.test(String(error)))
    return undefined;
  if (pkg === 'pg') return 'the "pg" package (node-postgres) is not installed: npm install pg';
  const other = pkg === 'redis' ? "ioredis (driver: 'ioredis')" : "redis (driver: 'node-redis')";
  return `the "${pkg}" package is not installed: npm install ${pkg} (or install ${other})`;
}
