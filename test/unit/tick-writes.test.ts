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

test('TickWrites: the first write of a turn goes at once, the rest of the turn in one go when it ends, in order', async (t) => {
  const { socket, received } = await connection(t);

  const writes = new TickWrites();
  writes.before(socket);
  assert.equal(socket.writableCorked, 0, 'the first command of a turn is not held back');
  socket.write('one ');
  for (const part of ['two ', 'three']) {
    writes.before(socket);
    socket.write(part);
  }
  // Still this turn: corked once (not once per write), the later two buffered.
  assert.equal(socket.writableCorked, 1);
  assert.ok(socket.writableLength >= 'two three'.length, `${socket.writableLength} bytes buffered`);
  await new Promise((resolve) => process.nextTick(resolve));
  assert.equal(socket.writableCorked, 0, 'uncorked when the turn ended');

  // The next turn starts afresh: its first command at once, its second corked.
  writes.before(socket);
  assert.equal(socket.writableCorked, 0);
  socket.write(' four');
  writes.before(socket);
  assert.equal(socket.writableCorked, 1);
  socket.write(' five');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(socket.writableCorked, 0);

  const deadline = Date.now() + 2_000;
  while (Buffer.concat(received).toString() !== 'one two three four five' && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(Buffer.concat(received).toString(), 'one two three four five');
});

test('TickWrites: a busy turn leaves in writes of 1, 8, 16, 32 commands, so Redis starts on the first ones', async (t) => {
  const { socket } = await connection(t);
  // Commands per corked write: the writes held since the socket was last uncorked, at each uncork
  // (the turn's first command went out at once, uncorked).
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
    if (socket.writableCorked > 0) pending++;
    socket.write('x');
  }
  assert.deepEqual([...batches], [8, 16, 32], 'full writes sent during the turn, each twice the one before');
  await new Promise((resolve) => process.nextTick(resolve));
  assert.deepEqual(batches, [8, 16, 32, 3], 'the rest when the turn ended');
  assert.equal(socket.writableCorked, 0);
});

test('TickWrites: a socket without cork() (or none yet) is written as it is', () => {
  const writes = new TickWrites();
  assert.doesNotThrow(() => writes.before(undefined));
  assert.doesNotThrow(() => writes.before({} as Socket));
});
