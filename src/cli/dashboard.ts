import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { newToken } from '../base/token.ts';
import { forceRelease } from '../inspect/force.ts';
import { PRIMITIVES, type Primitive } from '../inspect/key-names.ts';
import { connection, connectionHelp, connectionOptions, printJson } from './common.ts';
import { CliError, EXIT } from './exit.ts';
import { type LiveEntry, LiveView, startLive, type TimelineEvent } from './live.ts';
import { row } from './top.ts';
import { describeTarget, topologyHelp } from './topology.ts';
import { followLimit } from './values.ts';

export const dashboardHelp = `Usage: leasehold dashboard [<name-prefix>] [options]

Serves a live web page of every name under <name-prefix>: holder, age, TTL bar, fencing token
and waiters per name, a timeline of acquisitions, handoffs and losses, the notification mode and
the server's version. Live over Server-Sent Events from invalidation pushes (CLIENT TRACKING
BCAST): nothing is sent to Redis while nothing changes. Read-only unless --allow-release.

Options:
  --port <n>          port to listen on (default 7380; 0 picks a free one); a port in use
                      exits 73 at once
  --host <address>    address to listen on (default 127.0.0.1, this machine only). Any --host
                      requires a token: the printed URL carries it, every request must
  --allow-release     show a force-release button on every held name (asks for confirmation; each
                      release prints an audit line on stderr)
  --limit <n>         follow at most n names (default 1000)

${connectionHelp}

${topologyHelp}
`;

/** Timeline entries kept for pages that connect later. */
const TIMELINE = 200;

export async function dashboard(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...connectionOptions,
      port: { type: 'string' },
      host: { type: 'string' },
      'allow-release': { type: 'boolean' },
      limit: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(dashboardHelp);
    return EXIT.ok;
  }
  const conn = connection(values);
  // Digits only: Number() reads '' as 0 (a random port), and '0x50' or '1e3' as numbers.
  const port =
    values.port === undefined ? 7380 : /^\d{1,5}$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new CliError(`--port must be an integer from 0 to 65535; got ${values.port}`);
  }
  const limit = followLimit(values.limit);
  const host = values.host ?? '127.0.0.1';
  // Exposed beyond this machine (or asked for explicitly): every request must carry the token.
  const token = values.host === undefined ? undefined : newToken();
  const allowRelease = values['allow-release'] === true;
  const names = positionals[0] ?? '';

  const view = new LiveView(conn, names, limit);
  const timeline: TimelineEvent[] = [];
  const clients = new Set<ServerResponse>();
  const send = (event: string, data: unknown) => {
    const frame = `event: ${event}\ndata: ${json(data)}\n\n`;
    for (const res of clients) res.write(frame);
  };
  view.on('entry', (entry) => send('entry', row(entry)));
  view.on('remove', (removed) => send('remove', removed));
  view.on('timeline', (event) => {
    timeline.push(event);
    if (timeline.length > TIMELINE) timeline.shift();
    send('timeline', event);
  });
  view.on('mode', (mode) => send('mode', mode));
  view.on('error', (error) => send('problem', { message: error.message }));
  const signals = await startLive(view);
  const version = await view.serverVersion().catch(() => 'unknown');
  const server = conn.topology.kind === 'redis' ? version : `${version}, ${describeTarget(conn)}`;
  const page = readFileSync(new URL('./dashboard.html', import.meta.url), 'utf8');

  const hello = () => ({
    mode: view.mode,
    server,
    prefix: conn.prefix,
    names,
    allowRelease,
    now: Date.now(),
  });

  const http = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`error: ${(error as Error).message}\n`);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (token !== undefined && url.searchParams.get('token') !== token) {
      res.writeHead(401, { 'content-type': 'text/plain' });
      res.end('a token is required: use the URL leasehold dashboard printed\n');
      return;
    }
    const headers = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
    if (req.method === 'GET' && url.pathname === '/') {
      res.writeHead(200, {
        ...headers,
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy':
          "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
      });
      res.end(page);
      return;
    }
    if (req.method === 'GET' && url.pathname === '/events') {
      res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', connection: 'keep-alive' });
      res.write(`event: hello\ndata: ${json(hello())}\n\n`);
      for (const entry of view.entries.values()) res.write(`event: entry\ndata: ${json(row(entry))}\n\n`);
      for (const event of timeline) res.write(`event: timeline\ndata: ${json(event)}\n\n`);
      clients.add(res);
      req.on('close', () => clients.delete(res));
      return;
    }
    if (req.method === 'POST' && url.pathname === '/release') {
      await release(req, res, headers, remote(req));
      return;
    }
    res.writeHead(404, { ...headers, 'content-type': 'text/plain' });
    res.end('not found\n');
  }

  /**
   * Force-release of one holder of any primitive (inspect/force.ts, as `release --force --token`):
   * only with --allow-release, only of the holder the page showed (its own release script on the
   * value Redis stores: a newer holder is never touched), with the name typed back as
   * confirmation, and an audit line on stderr.
   */
  async function release(
    req: IncomingMessage,
    res: ServerResponse,
    headers: Record<string, string>,
    who: string,
  ): Promise<void> {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { ...headers, 'content-type': 'application/json' });
      res.end(json(body));
    };
    if (!allowRelease) return reply(403, { error: 'read-only: start the dashboard with --allow-release' });
    const body = JSON.parse(await readBody(req)) as {
      name?: unknown;
      primitive?: unknown;
      token?: unknown;
      confirm?: unknown;
    };
    const { name, token: holder, confirm } = body;
    const primitive = body.primitive ?? 'mutex';
    if (typeof name !== 'string' || typeof holder !== 'string' || confirm !== name) {
      return reply(400, { error: 'name, the holder token, and confirm (the name typed again) are needed' });
    }
    if (!PRIMITIVES.includes(primitive as Primitive)) {
      return reply(400, { error: `primitive must be one of ${PRIMITIVES.join(', ')}` });
    }
    const kind = primitive as Primitive;
    const entry: LiveEntry | undefined = view.entries.get(`${kind}\u0000${name}`);
    // Every reader: one Redis, or each node of a quorum (the holder's copy on each).
    const freed = (
      await Promise.all(view.readers.map((reader) => forceRelease(reader, conn.prefix, name, kind, holder)))
    ).flat();
    const gone = freed.find((f) => f.released) ?? freed[0];
    if (gone === undefined) return reply(409, { error: 'that holder no longer holds it' });
    const { released, owner } = gone;
    process.stderr.write(
      `leasehold dashboard: AUDIT ${new Date().toISOString()} force-release name=${JSON.stringify(name)} ` +
        `primitive=${kind} owner=${JSON.stringify(owner ?? null)} token=${holder} released=${released} from=${who}\n`,
    );
    const event: TimelineEvent = {
      time: Date.now(),
      type: 'forced',
      name,
      primitive: kind,
      owner,
      fencingToken: entry?.inspection.holders.find((h) => h.token === holder)?.fencingToken,
    };
    timeline.push(event);
    send('timeline', event);
    return reply(200, { released });
  }

  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => resolve());
    });
  } catch (error) {
    signals.stop();
    await view.close();
    throw new CliError(listenFailure(error as NodeJS.ErrnoException, host, port), EXIT.cannotListen);
  }
  const address = http.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const link = `http://${shown}:${address.port}/${token === undefined ? '' : `?token=${token}`}`;
  if (values.json) printJson({ event: 'listening', url: link, mode: view.mode, server });
  else {
    process.stdout.write(`leasehold dashboard: ${link}\n`);
    process.stdout.write(
      `  ${server}, ${view.mode}, ${allowRelease ? 'force-release allowed (audited)' : 'read-only'}` +
        `${token === undefined ? '' : '; the token in the URL is required'}\n`,
    );
  }

  await signals.stopped;
  for (const res of clients) res.end();
  http.closeAllConnections();
  await new Promise<void>((resolve) => http.close(() => resolve()));
  await view.close();
  return EXIT.ok;
}

/** Why the page cannot be served, in one line: the port taken is the common case. */
function listenFailure(error: NodeJS.ErrnoException, host: string, port: number): string {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the port is in use (another dashboard?); pick another with --port, or --port 0 for a free one`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges); pick another with --port`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${host} is not an address of this machine (see --host)`;
    default:
      return `cannot listen on ${where}: ${error.message}`;
  }
}

function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
}

function remote(req: IncomingMessage): string {
  return `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
}

/** A request body, at most 4 KiB (a release names one lock). */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
      if (body.length > 4_096) {
        reject(new Error('request body too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}
