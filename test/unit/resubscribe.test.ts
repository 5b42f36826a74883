import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { Resubscribe } from '../../src/driver/resubscribe.ts';

/**
 * A subscription whose SUBSCRIBEs are settled by the test: `answers` lists what each one gets
 * (true: subscribed, false: refused), `connected` stands for the client's ready state.
 */
function fakeChannel(answers: boolean[]) {
  const events: string[] = [];
  const pending: Array<(ok: boolean) => void> = [];
  let sent = 0;
  const state = { connected: true };
  const keep = new Resubscribe(
    () => {
      sent += 1;
      return new Promise<void>((resolve, reject) => {
        pending.push((ok) => (ok ? resolve() : reject(new Error('NOPERM'))));
      });
    },
    { up: () => events.push('up'), down: () => events.push('down') },
    () => state.connected,
  );
  /** Answers the oldest SUBSCRIBE still out, as `answers` says, and lets its handlers run. */
  const answer = async () => {
    pending.shift()?.(answers.shift() ?? true);
    await new Promise<void>((resolve) => setImmediate(resolve));
  };
  return { keep, events, state, answer, sent: () => sent };
}

test('Resubscribe: a refused SUBSCRIBE goes again after 1 s, then 2 s, and comes up once allowed', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const ch = fakeChannel([false, false, true]);
    ch.keep.ready();
    await ch.answer();
    assert.deepEqual(ch.events, ['down']);
    mock.timers.tick(999);
    assert.equal(ch.sent(), 1, 'not before the pause');
    mock.timers.tick(1);
    assert.equal(ch.sent(), 2, 'again after 1 s');
    await ch.answer();
    mock.timers.tick(1_999);
    assert.equal(ch.sent(), 2);
    mock.timers.tick(1);
    assert.equal(ch.sent(), 3, 'the pause doubled');
    await ch.answer();
    assert.deepEqual(ch.events, ['down', 'down', 'up']);
    mock.timers.tick(60_000);
    assert.equal(ch.sent(), 3, 'nothing more once subscribed');
  } finally {
    mock.timers.reset();
  }
});

test('Resubscribe: a failure while disconnected waits for the next ready; a ready while one is out sends one more', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const ch = fakeChannel([false, false, true]);
    ch.keep.ready();
    ch.state.connected = false;
    await ch.answer();
    mock.timers.tick(30_000);
    assert.equal(ch.sent(), 1, 'no SUBSCRIBE on a connection that is down');
    ch.state.connected = true;
    ch.keep.ready();
    assert.equal(ch.sent(), 2, 'the reconnect sends it');
    ch.keep.ready();
    assert.equal(ch.sent(), 2, 'one out at a time');
    await ch.answer();
    assert.equal(ch.sent(), 3, 'the ready that came meanwhile sends one more');
    await ch.answer();
    assert.deepEqual(ch.events, ['down', 'up']);
  } finally {
    mock.timers.reset();
  }
});

test('Resubscribe: close() stops the retries and the handlers', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const ch = fakeChannel([false, true]);
    ch.keep.ready();
    await ch.answer();
    ch.keep.close();
    mock.timers.tick(60_000);
    ch.keep.ready();
    assert.equal(ch.sent(), 1);
    assert.deepEqual(ch.events, ['down']);
  } finally {
    mock.timers.reset();
  }
});
