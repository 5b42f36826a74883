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

test('PacedSends: a busy turn reaches the client in writes of 8, 16, 32, 64 commands, in order', async () => {
  const client = fakeClient();
  const paced = new PacedSends();
  const names = Array.from({ length: 200 }, (_, i) => `c${i}`);
  const replies = await Promise.all(names.map((name) => paced.send(() => client.send(name))));
  assert.deepEqual(replies, names, 'every caller gets its own reply');
  assert.deepEqual(
    client.writes.map((write) => write.length),
    [8, 16, 32, 64, 64, 16],
  );
  assert.deepEqual(client.writes.flat(), names, 'in the order issued');
  // The stretch is over once a turn finds nothing waiting: the next busy one starts again at 8.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  client.writes.length = 0;
  await Promise.all(names.slice(0, 30).map((name) => paced.send(() => client.send(name))));
  assert.deepEqual(
    client.writes.map((write) => write.length),
    [8, 16, 6],
  );
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

  // Commands waiting: the batch waits behind them and goes whole with the write that takes them
  // (the second of a stretch, 16: 10 singles, then the batch counted as 8), and 'z' after it.
  client.writes.length = 0;
  const singles = Array.from({ length: 10 }, (_, i) => `s${i}`);
  const before = singles.map((name) => paced.send(() => client.send(name)));
  const whole = sendBatch();
  const after = paced.send(() => client.send('z'));
  await Promise.all([...before, whole, after]);
  assert.deepEqual(client.writes, [[...singles, ...batch], ['z']]);
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

test('PacedSends: whatever the mix of sends, batches, failures and turns, every send settles in order', async () => {
  // A seeded generator, so that a failure repeats.
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const client = fakeClient();
  const paced = new PacedSends();
  const settled: number[] = [];
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < 600; i++) {
    const kind = random();
    const track = (promise: Promise<unknown>) =>
      all.push(
        promise.then(
          () => settled.push(i),
          () => settled.push(i),
        ),
      );
    if (kind < 0.6) track(paced.send(() => client.send(`c${i}`)));
    else if (kind < 0.7)
      track(paced.sendBatch(() => Promise.all([client.send(`b${i}a`), client.send(`b${i}b`)])));
    else if (kind < 0.75)
      track(
        paced.send((): Promise<string> => {
          throw new Error('sync');
        }),
      );
    else if (kind < 0.8) track(paced.send(() => Promise.reject(new Error('offline'))));
    else if (kind < 0.9) await new Promise((resolve) => setImmediate(resolve));
    else await Promise.resolve();
  }
  await Promise.race([
    Promise.all(all),
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`stuck: ${settled.length} of ${all.length} settled`)), 2_000),
    ),
  ]);
  const written = client.writes.flat();
  // The client saw the commands in the order they were issued.
  const order = written.map((name) => Number(name.replace(/[a-z]/g, '')));
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
  );
  // Not asserted here: the size of each write. A send the client refuses without scheduling a write
  // (offline) lets PacedSends' turn marker run before the client's next write, so one write may
  // then carry more; the tests above check the size where the client takes what it is handed.
});
