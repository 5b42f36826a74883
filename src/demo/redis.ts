import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A Redis for the demo: REDIS_URL, else a private redis-server, else the default port. */
export interface DemoRedis {
  url: string;
  description: string;
  stop(): void;
}

export async function demoRedis(): Promise<DemoRedis> {
  const fromEnv = process.env['REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { url: fromEnv, description: `REDIS_URL (${fromEnv})`, stop() {} };
  }
  if (spawnSync('redis-server', ['--version']).status === 0) {
    const port = await freePort();
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const stop = () => killChild(child);
    process.once('exit', stop);
    for (let i = 0; i < 100; i++) {
      if (await canConnect(port)) {
        return {
          url: `redis://127.0.0.1:${port}`,
          description: `a private redis-server on port ${port}`,
          stop,
        };
      }
      await sleep(20);
    }
    stop();
  }
  return {
    url: 'redis://127.0.0.1:6379',
    description: 'redis://127.0.0.1:6379 (no redis-server on PATH)',
    stop() {},
  };
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
