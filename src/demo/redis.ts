import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * A Redis for the demo: REDIS_URL, else a private redis-server (on PATH, or one that
 * scripts/servers.sh fetched into .servers/). Undefined when there is neither: the demo never
 * uses a Redis it did not start unless REDIS_URL names it (a server on the default port may be
 * someone's data).
 */
export interface DemoRedis {
  url: string;
  description: string;
  /** REDIS_URL's server: the demo deletes its keys from it when done (a private one just stops). */
  external: boolean;
  stop(): void;
}

export async function demoRedis(): Promise<DemoRedis | undefined> {
  const fromEnv = process.env['REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { url: fromEnv, description: `REDIS_URL (${fromEnv})`, external: true, stop() {} };
  }
  const binary = serverBinary();
  if (binary === undefined) return undefined;
  const port = await freePort();
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  child.on('error', () => {});
  const stop = () => killChild(child);
  process.once('exit', stop);
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) {
      return {
        url: `redis://127.0.0.1:${port}`,
        description: `a private redis-server on port ${port}`,
        external: false,
        stop,
      };
    }
    await sleep(20);
  }
  stop();
  return undefined;
}

/**
 * redis-server on PATH, else the first server line scripts/servers.sh fetched into .servers/
 * ($LEASEHOLD_SERVERS_DIR, as for that script).
 */
function serverBinary(): string | undefined {
  if (spawnSync('redis-server', ['--version']).status === 0) return 'redis-server';
  const servers =
    process.env['LEASEHOLD_SERVERS_DIR'] || fileURLToPath(new URL('../../.servers/', import.meta.url));
  if (!existsSync(servers)) return undefined;
  for (const line of readdirSync(servers).sort()) {
    const binary = join(servers, line, 'redis-server');
    if (spawnSync(binary, ['--version']).status === 0) return binary;
  }
  return undefined;
}

/** Deletes every key under `prefix` (the demo's own, demo-<pid>) from REDIS_URL's server. */
export async function removeKeys(
  client: {
    scanIterator(o: { MATCH: string; COUNT: number }): AsyncIterable<string[]>;
    unlink(keys: string[]): Promise<number>;
  },
  prefix: string,
): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: `${prefix}:*`, COUNT: 500 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
}

function killChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function canConnect(port: number): Promise<boolean> {
  const { createConnection } = await import('node:net');
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
