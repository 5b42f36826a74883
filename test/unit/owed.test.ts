import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Owed } from '../../src/engine/owed.ts';

test('Owed: nothing owed settles at once and hands nothing on', async () => {
  const owed = new Owed();
  assert.equal(owed.unsettled, false);
  await owed.settle();
  const handed: unknown[] = [];
  owed.end((send) => handed.push(send));
  assert.deepEqual(handed, []);
});

test('Owed: settle sends the debt once, and is unsettled while it is on its way', async () => {
  const owed = new Owed();
  let sent = 0;
  let confirm: () => void = () => {};
  owed.owe(() => {
    sent += 1;
    return new Promise<void>((resolve) => {
      confirm = resolve;
    });
  });
  assert.equal(owed.unsettled, true);
  const settling = owed.settle();
  assert.equal(sent, 1);
  assert.equal(owed.unsettled, true, 'a grant arriving now is not adopted');
  confirm();
  await settling;
  assert.equal(owed.unsettled, false);
  await owed.settle();
  assert.equal(sent, 1, 'a settled debt is not sent again');
});

test('Owed: an unconfirmed settle rejects and keeps the debt for the next attempt or for GiveBacks', async () => {
  const owed = new Owed();
  const down = new Error('Redis did not answer');
  let sent = 0;
  const send = async () => {
    sent += 1;
    throw down;
  };
  owed.owe(send);
  await assert.rejects(owed.settle(), down);
  assert.equal(owed.unsettled, true);
  await assert.rejects(owed.settle(), down);
  assert.equal(sent, 2);
  const handed: unknown[] = [];
  owed.end((s) => handed.push(s));
  assert.deepEqual(handed, [send], 'the wait ended without a lease: the debt goes on');
  assert.equal(owed.unsettled, false);
});

test('Owed: a debt owed while a settle is on its way is sent too before settle resolves', async () => {
  const owed = new Owed();
  let confirm: () => void = () => {};
  const sent: string[] = [];
  owed.owe(() => {
    sent.push('first');
    return new Promise<void>((resolve) => {
      confirm = resolve;
    });
  });
  const settling = owed.settle();
  const second = owed.settle();
  owed.owe(async () => {
    sent.push('newer');
  });
  confirm();
  await Promise.all([settling, second]);
  assert.deepEqual(sent, ['first', 'newer'], 'two settles share one send; the newer debt follows');
  assert.equal(owed.unsettled, false);
  const handed: unknown[] = [];
  owed.end((s) => handed.push(s));
  assert.deepEqual(handed, []);
});

test('Owed: a debt owed after the wait ended goes where end() sent the rest', async () => {
  const owed = new Owed();
  const handed: unknown[] = [];
  owed.end((s) => handed.push(s));
  // An attempt still on its way when its caller timed out, whose reply the connection then lost.
  const late = async () => {};
  owed.owe(late);
  assert.deepEqual(handed, [late], 'handed on at once: no later end() would send it');
  assert.equal(owed.unsettled, false);
});
