import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { RedisServer } from './redis-server.ts';

const run = promisify(execFile);

/** PEM files made for one test file, in a temp directory that `remove()` deletes. */
export interface Certificates {
  dir: string;
  /** The CA that signed both server certificates and the client certificate. */
  ca: string;
  /** A CA that signed nothing here: trusting it instead of `ca` must fail. */
  otherCa: string;
  /** Server certificate for IP 127.0.0.1 and DNS localhost. */
  serverCert: string;
  serverKey: string;
  /** Server certificate for DNS redis.test only: a connection to 127.0.0.1 needs servername. */
  namedCert: string;
  namedKey: string;
  /** Client certificate, for a server with tls-auth-clients yes. */
  clientCert: string;
  clientKey: string;
  remove(): Promise<void>;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

/** A self-signed CA: `<name>.pem` and `<name>.key`. */
async function ca(dir: string, name: string): Promise<void> {
  await openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=leasehold test ${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  ]);
}

/** A certificate for `subjectAltName` (or a client certificate) signed by the CA `ca`. */
async function leaf(dir: string, name: string, san: string | undefined): Promise<void> {
  await openssl(dir, [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=leasehold test ${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  const ext = join(dir, `${name}.ext`);
  await writeFile(
    ext,
    san === undefined
      ? 'extendedKeyUsage=clientAuth\n'
      : `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`,
  );
  await openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    ext,
    '-out',
    `${name}.pem`,
  ]);
}

/** Generates a CA, another CA, two server certificates and a client certificate with openssl. */
export async function makeCertificates(): Promise<Certificates> {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-tls-'));
  await ca(dir, 'ca');
  await ca(dir, 'other-ca');
  await leaf(dir, 'server', 'IP:127.0.0.1,DNS:localhost');
  await leaf(dir, 'named', 'DNS:redis.test');
  await leaf(dir, 'client', undefined);
  const at = (file: string) => join(dir, file);
  return {
    dir,
    ca: at('ca.pem'),
    otherCa: at('other-ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    namedCert: at('named.pem'),
    namedKey: at('named.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A redis-server with a TLS port beside its plain one (the harness pings the plain one). */
export interface TlsServer {
  server: RedisServer;
  tlsPort: number;
  /** `rediss://[auth@]127.0.0.1:<tlsPort>`. */
  url(auth?: string): string;
}

/**
 * Starts a redis-server speaking TLS on a second port with `cert` / `key`, trusting `ca` for
 * client certificates; `clients: 'yes'` requires one. Undefined when the binary was built
 * without TLS (the caller skips, saying so).
 */
export async function startTlsServer(
  certs: Certificates,
  options: { cert: string; key: string; clients: 'yes' | 'no' },
): Promise<TlsServer | undefined> {
  // Servers started side by side can race for a port freePort() handed out: a bind error on the
  // TLS port is retried on another one, never taken for "this build has no TLS" (which it was:
  // the quorum TLS test then read `url` of undefined, one CI run in many).
  for (let attempt = 1; ; attempt++) {
    const tlsPort = await freePort();
    let server: RedisServer;
    try {
      server = await RedisServer.start({
        args: [
          '--tls-port',
          String(tlsPort),
          '--tls-cert-file',
          options.cert,
          '--tls-key-file',
          options.key,
          '--tls-ca-cert-file',
          certs.ca,
          '--tls-auth-clients',
          options.clients,
        ],
      });
    } catch (error) {
      const text = String(error);
      if (/in use|bind/i.test(text) && attempt < 5) continue;
      // A redis-server built without TLS refuses the directives: the caller skips, saying so.
      if (/Bad directive|unknown option|not supported/i.test(text)) return undefined;
      throw error;
    }
    return {
      server,
      tlsPort,
      url: (auth) => `rediss://${auth === undefined ? '' : `${auth}@`}127.0.0.1:${tlsPort}`,
    };
  }
}

/** The text of a PEM file. */
export const pem = (path: string): Promise<string> => readFile(path, 'utf8');
