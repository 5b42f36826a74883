/** The shape of the `tls` option (src/options/tls.ts checks it; the drivers pass it on). */

/** PEM text (or its bytes), as node:tls takes it. */
export type Pem = string | Buffer;

/**
 * TLS settings for the connections leasehold opens itself to a `rediss://` URL. They go to
 * node:tls through the client library (node-redis's `socket`, ioredis's `tls`). Certificates are
 * verified by default: a server whose certificate no trusted CA signed, or whose name does not
 * match, fails connect() with ConnectError.
 * @example
 * import { readFileSync } from 'node:fs';
 * const lh = await Leasehold.connect({
 *   url: 'rediss://redis.internal:6380',
 *   tls: { ca: readFileSync('/etc/ssl/redis-ca.pem') },
 * });
 */
export interface TlsOptions {
  /**
   * The certificate authorities to trust (PEM; several in one string, or an array). Replaces
   * Node's bundled CAs for these connections, as node:tls does; to add to them instead, start
   * the process with `NODE_EXTRA_CA_CERTS=/path/ca.pem`.
   * @default Node's bundled CAs (plus NODE_EXTRA_CA_CERTS)
   */
  ca?: Pem | Pem[];
  /**
   * A client certificate (PEM), for servers that require one (`tls-auth-clients yes`). Needs `key`.
   * @default none
   */
  cert?: Pem;
  /**
   * The client certificate's private key (PEM). Needs `cert`. Never shown in error messages.
   * @default none
   */
  key?: Pem;
  /**
   * The name the server's certificate must carry, when it differs from the URL's host (a
   * connection by IP address to a certificate issued for a DNS name). Also sent as SNI.
   * @default the URL's host
   */
  servername?: string;
  /**
   * false accepts any certificate: the connection is encrypted but the server unverified, so
   * anyone on the path can impersonate it and read the password. For a throw-away test setup only.
   * @default true
   */
  rejectUnauthorized?: boolean;
}
