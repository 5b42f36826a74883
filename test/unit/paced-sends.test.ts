import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PacedSends } from '../../src/driver/paced-sends.ts';

/**
 * Stands for node-redis's command queue: a command issued is queued and a write is scheduled
 * with setImmediate, which then writes everything queued so far at once (node-redis's
 * #scheduleWrite). `writes` lists what each write carried; a command resolves when written.
 */
function fakeClient() {
  const writes: string[][] = [];
  let queued: Array<{ name: string; resolve: (name: string) => void }> = [];
  let scheduled = false;
  const send = (name: string): Promise<string> =>
    new Promise((resolve) => {
      queued.push({ name, resolve });
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        const batch = queued;
        queued = [];
        writes.push(batch.map((command) => command.name));
        for (const command of batch) command.resolve(command.name);
      });
    });
  return { writes, send };
}

test('PacedSends: a busy turn reaches the client 8 commands per write, in order', async () => {
  const client = fakeClient();
  const paced = new PacedSends();
  const names = Array.from({ length: 20 }, (_, i) => `c${i}`);
  const replies = await Promise.all(names.map((name) => paced.send(() => client.send(name))));
  assert.deepEqual(replies, names, 'every caller gets its own reply');
  assert.deepEqual(client.writes, [names.slice(0, 8), names.slice(8, 16), names.slice(16)]);
});

test('PacedSends: a turn with few commands goes out in one write, with no delay', async () => {
  const client = fakeClient();
  const paced = new PacedSends();
  const sent: string[] = [];
  for (const name of ['a', 'b', 'c'])
    paced.send(() => {
      sent.push(name);
      return client.send(name);
    });
  assert.deepEqual(sent, ['a', 'b', 'c'], 'handed to the client in the same turn');
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  // The next turn starts a new write of its own.
  await paced.send(() => client.send('d'));
  assert.deepEqual(client.writes, [['a', 'b', 'c'], ['d']]);
});

test('PacedSends: a batch goes out whole, after everything issued before it', async () => {
  const client = fakeClient();
  const paced = new PacedSends();
  const batch = Array.from({ length: 30 }, (_, i) => `x${i}`);
  const sendBatch = () => paced.sendBatch(() => Promise.all(batch.map((name) => client.send(name))));

  // Nothing waiting: the batch joins the current write, whatever its size.
  await Promise.all([paced.send(() => client.send('a')), sendBatch()]);
  assert.deepEqual(client.writes, [['a', ...batch]]);

  // Commands waiting: the batch waits behind them, then fills a write of its own.
  client.writes.length = 0;
  const singles = Array.from({ length: 10 }, (_, i) => `s${i}`);
  const before = singles.map((name) => paced.send(() => client.send(name)));
  const whole = sendBatch();
  const after = paced.send(() => client.send('z'));
  await Promise.all([...before, whole, after]);
  assert.deepEqual(client.writes, [singles.slice(0, 8), [...singles.slice(8), ...batch], ['z']]);
});

test('PacedSends: a send that throws rejects its caller, not the process', async () => {
  const client = fakeClient();
  const paced = new PacedSends();
  const first = Array.from({ length: 8 }, (_, i) => paced.send(() => client.send(`c${i}`)));
  const failing = paced.send((): Promise<string> => {
    throw new Error('client closed');
  });
  const later = paced.send(() => client.send('after'));
  await Promise.all(first);
  await assert.rejects(failing, /client closed/);
  assert.equal(await later, 'after', 'the queue goes on after a failed send');
});
