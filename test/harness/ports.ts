import { createServer } from 'node:net';

/** Asks the kernel for a free TCP port on loopback (listen on 0, read it back, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port the kernel chose'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
