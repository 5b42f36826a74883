import type { GlideClientConfiguration } from '@valkey/valkey-glide';
import { missingPackage } from './connect-errors.ts';
import { asError, type NodeDriverOptions } from './types.ts';

/** Loads `@valkey/valkey-glide`, or fails saying which package to install. */
export async function loadGlide(): Promise<typeof import('@valkey/valkey-glide')> {
  try {
    return await import('@valkey/valkey-glide');
  } catch (error) {
    throw new Error(missingPackage(error, '@valkey/valkey-glide') ?? asError(error).message, {
      cause: error,
    });
  }
}

/**
 * A GLIDE client configuration for a redis:// or rediss:// URL: host and port, user and password,
 * database, TLS (the `tls` option's `ca` as GLIDE's root certificates; GLIDE takes no client
 * certificate, and checks the name in the URL). `limit` (commandTimeout) bounds each connection
 * attempt, as it does for the other drivers.
 */
export function glideConfig(options: NodeDriverOptions, limit: number): GlideClientConfiguration {
  const url = new URL(options.url);
  const tls = url.protocol === 'rediss:';
  const database = url.pathname.replace(/^\//, '');
  const password = decodeURIComponent(url.password);
  const username = decodeURIComponent(url.username);
  const ca = options.tls?.ca;
  if (options.tls?.cert !== undefined || options.tls?.key !== undefined) {
    throw new TypeError(
      'tls.cert and tls.key: Valkey GLIDE takes no client certificate (use node-redis or ioredis)',
    );
  }
  if (options.tls?.servername !== undefined) {
    throw new TypeError(
      'tls.servername: Valkey GLIDE checks the name in the URL (use node-redis or ioredis)',
    );
  }
  const roots = ca === undefined ? undefined : Array.isArray(ca) ? ca.map(String).join('\n') : ca;
  return {
    addresses: [{ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) }],
    // A backstop only: leasehold's own watchdog gives the client up at `limit` first (GlideDriver),
    // so that a stall counts as a dropped connection, as it does with the other clients.
    requestTimeout: Math.min(2 * limit, 2 ** 31 - 1),
    ...(tls ? { useTLS: true } : {}),
    ...(password === '' ? {} : { credentials: { password, ...(username === '' ? {} : { username }) } }),
    ...(database === '' ? {} : { databaseId: Number(database) }),
    advancedConfiguration: {
      connectionTimeout: Math.min(limit, 2 ** 31 - 1),
      ...(roots === undefined ? {} : { tlsAdvancedConfiguration: { rootCertificates: roots } }),
    },
  };
}

/**
 * GLIDE names the kind of a server's error reply in words ("An error was signalled by the server:
 * - NoScriptError: No matching script..."); the code leasehold reads (NOSCRIPT, NOPERM, ERR) is
 * put back in front, so that replies read the same whichever client carried them.
 */
const KINDS: Readonly<Record<string, string>> = {
  NoScriptError: 'NOSCRIPT',
  PermissionDenied: 'NOPERM',
  ResponseError: 'ERR',
  AuthenticationFailed: 'WRONGPASS',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ExecAbortError: 'EXECABORT',
  NotBusy: 'NOTBUSY',
  Moved: 'MOVED',
  Ask: 'ASK',
};

export function serverError(error: unknown): Error {
  const e = asError(error);
  const match = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/.exec(e.message);
  if (match === null) return e;
  const [, kind = '', text = ''] = match;
  const code = KINDS[kind];
  if (code === undefined) return e;
  // Some kinds carry the code in their text already ("NOPERM ..." raised by a script).
  return new Error(text.startsWith(`${code} `) ? text : `${code} ${text}`, { cause: e });
}

/**
 * GLIDE's failure to create a client ("Connection error: Standalone(Received error for address
 * `h:p`: WRONGPASS: invalid ...)"), with the server's own refusal in front where there is one,
 * as the other clients report it.
 */
export function connectError(error: unknown): Error {
  const e = asError(error);
  const inner = /Received error for address `[^`]*`: ([A-Z][A-Z_]+): ([\s\S]*?)\s*\)?\s*$/.exec(e.message);
  if (inner === null) return e;
  return new Error(`${inner[1]} ${inner[2]}`, { cause: e });
}
