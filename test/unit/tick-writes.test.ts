import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { type TestContext, test } from 'node:test';
import { TickWrites } from '../../src/driver/tick-writes.ts';

/** A loopback TCP connection; `received` collects what the far end reads. Closed after the test. */
async function connection(t: TestContext): Promise<{ socket: Socket; received: Buffer[] }> {
  const received: Buffer[] = [];
  const server = createServer((peer: Socket) => peer.on('data', (chunk: Buffer) => received.push(chunk)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  t.after(() => {
    socket.destroy();
    server.close();
  });
  await once(socket, 'connect');
  return { socket, received };
}

test('TickWrites: the writes of one turn leave in one go when the turn ends, in order', async (t) => {
  const { socket, received } = await connection(t);

  const writes = new TickWrites();
  for (const part of ['one ', 'two ', 'three']) {
    writes.before(socket);
    socket.write(part);
  }
  // Still this turn: corked once (not once per write), everything buffered, nothing sent.
  assert.equal(socket.writableCorked, 1);
  assert.equal(socket.writableLength, 'one two three'.length);
  await new Promise((resolve) => process.nextTick(resolve));
  assert.equal(socket.writableCorked, 0, 'uncorked when the turn ended');

  // The next turn corks again.
  writes.before(socket);
  socket.write(' four');
  assert.equal(socket.writableCorked, 1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(socket.writableCorked, 0);

  const deadline = Date.now() + 2_000;
  while (Buffer.concat(received).toString() !== 'one two three four' && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(Buffer.concat(received).toString(), 'one two three four');
});

test('TickWrites: a busy turn leaves in writes of 8, 16, 32 commands, so Redis starts on the first ones', async (t) => {
  const { socket } = await connection(t);
  // Commands per write: the writes made since the socket was last uncorked, at each uncork.
  const batches: number[] = [];
  let pending = 0;
  const uncork = socket.uncork.bind(socket);
  socket.uncork = () => {
    batches.push(pending);
    pending = 0;
    uncork();
  };
  const writes = new TickWrites();
  for (let i = 0; i < 60; i++) {
    writes.before(socket);
    socket.write('x');
    pending++;
  }
  assert.deepEqual([...batches], [8, 16, 32], 'full writes sent during the turn, each twice the one before');
  await new Promise((resolve) => process.nextTick(resolve));
  assert.deepEqual(batches, [8, 16, 32, 4], 'the rest when the turn ended');
  assert.equal(socket.writableCorked, 0);
});

test('TickWrites: a socket without cork() (or none yet) is written as it is', () => {
  const writes = new TickWrites();
  assert.doesNotThrow(() => writes.before(undefined));
  assert.doesNotThrow(() => writes.before({} as Socket));
});
