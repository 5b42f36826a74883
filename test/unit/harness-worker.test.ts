import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from '../harness/worker.ts';

const echo = fileURLToPath(new URL('../harness/fixtures/echo-worker.ts', import.meta.url));
// A cold start (tsx compiling the harness on a busy CI machine) is not what these tests time.
const STARTUP = 15_000;
const type = (name: string) => (message: { [key: string]: unknown }) => message['type'] === name;
const pong = (n: number) => (message: { [key: string]: unknown }) =>
  message['type'] === 'pong' && message['n'] === n;

describe('Worker', { timeout: 20_000 }, () => {
  const workers: Worker[] = [];
  after(() => Promise.all(workers.map((worker) => worker.stop())));

  async function start(args: string[] = []): Promise<Worker> {
    const worker = await Worker.start(echo, { args });
    workers.push(worker);
    return worker;
  }

  test('round-trips messages and passes arguments', async () => {
    const worker = await start(['a', 'b']);
    const ready = await worker.next(type('ready'), STARTUP);
    assert.deepEqual(ready, { type: 'ready', pid: worker.pid, args: ['a', 'b'] });
    worker.send({ type: 'ping', n: 1 });
    assert.equal((await worker.next(pong(1)))['n'], 1);
    // Messages that arrived before anyone asked are kept, and can be taken out of order.
    worker.send({ type: 'ping', n: 2 });
    worker.send({ type: 'ping', n: 3 });
    await worker.next(pong(3));
    await worker.next(pong(2));
    // stderr lines reach `log`; a message on stdout does not wait for them (two pipes).
    worker.send({ type: 'log', text: 'to stderr' });
    await worker.logged(/to stderr/);
    assert.doesNotMatch(worker.log, /"type":"pong"/, 'messages are not copied into the log');
  });

  test('pause stops the worker until resume', async () => {
    const worker = await start();
    await worker.next(type('ready'), STARTUP);
    worker.pause();
    const paused = Date.now();
    worker.send({ type: 'ping', n: 5 });
    await assert.rejects(worker.next(pong(5), 300), /no matching message within 300 ms/);
    worker.resume();
    const answer = await worker.next(pong(5));
    assert.ok(Number(answer['at']) - paused >= 300, 'the pong was written only after resume');
  });

  test('exited reports the exit code, and waiting on a dead worker rejects', async () => {
    const worker = await start();
    await worker.next(type('ready'), STARTUP);
    worker.send({ type: 'exit', code: 3 });
    assert.deepEqual(await worker.exited, { code: 3, signal: null });
    await assert.rejects(worker.next(type('pong')), /exited \(code 3\)/);
    assert.throws(() => worker.send({ type: 'ping' }), /exited/);
  });

  test('kill delivers the signal, even to a paused worker', async () => {
    const worker = await start();
    await worker.next(type('ready'), STARTUP);
    worker.pause();
    assert.deepEqual(await worker.kill('SIGTERM'), { code: null, signal: 'SIGTERM' });
  });

  test('stop kills a worker that is still waiting for messages', async () => {
    const worker = await start();
    const waiting = worker.next(type('never'), 10_000);
    await worker.stop();
    await assert.rejects(waiting, /exited/);
    assert.equal((await worker.exited).signal, 'SIGKILL');
  });
});
