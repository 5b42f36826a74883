import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { CanaryPort } from '../../src/driver/canary.ts';
import { Canary } from '../../src/driver/canary.ts';

// A proof runs after every connect and reconnect without anyone awaiting it (the ioredis driver
// even starts two at connect). A driver's close() that cut one off between its script (which
// writes the two canary keys) and its poke (which deletes them) left the keys behind for their
// 60 s TTL: a model test's "no key is stranded after close()" caught it once in a CI rehearsal.
// close() now settles the proofs in flight first. The port here stands for a driver; the proof's
// use of Redis itself is covered by the integration suites.
// The canary's timers are unref'd on purpose (a proof must never hold a process open), and in a
// driver the connection's socket keeps the loop alive. These ports have no socket: without a ref'd
// handle, Node 22's runner sees an empty loop while settle() and the proofs still wait, and
// cancels the tests ("the event loop has already resolved"). Node 24's runner keeps its own.
let socketStandIn: NodeJS.Timeout | undefined;
before(() => {
  socketStandIn = setInterval(() => {}, 1_000);
});
after(() => clearInterval(socketStandIn));

test('Canary.settle() waits for a proof in flight until its poke is done, and no longer than asked', async () => {
  const canary = new Canary();
  let poked = false;
  let openGate: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  const port: CanaryPort = {
    eval: async () => 'OK',
    poke: async (keys) => {
      await gate;
      poked = true;
      canary.hear(keys);
    },
  };
  await canary.settle(1_000); // nothing in flight: at once
  const proof = canary.prove(port, 'base');
  let settled = false;
  const settling = canary.settle(5_000).then(() => {
    settled = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(settled, false, 'still waiting for the poke');
  openGate();
  await settling;
  assert.equal(poked, true);
  assert.equal((await proof).ok, true);

  // A proof that never ends (a hung server) holds close() up for the limit only.
  void canary.prove({ eval: () => new Promise(() => {}), poke: async () => {} }, 'hung');
  const started = performance.now();
  await canary.settle(50);
  assert.ok(performance.now() - started < 1_000, 'settle() gave up at its limit');
});

// The lock scripts arm tracking with several read commands (PTTL after an acquisition, EXISTS for
// a waiter, GET, HGET, ZRANGE, XRANGE, XREVRANGE): a server or proxy that pushes for some and not
// others must fail the proof, or holders would wait for pushes that never come.
test('a proof fails, naming the reads, when pushes come for some arming reads and not for others', async () => {
  const canary = new Canary();
  const port: CanaryPort = {
    eval: async () => 'OK',
    poke: async (keys) => canary.hear(keys.filter((key) => !/:(pttl|exists)$/.test(key))),
  };
  const proof = await canary.prove(port, 'partial');
  assert.equal(proof.ok, false);
  assert.match(String(proof.reason?.message), /read with PTTL, EXISTS/);
  const second = new Canary();
  const whole = await second.prove(
    { eval: async () => 'OK', poke: async (keys) => second.hear(keys) },
    'whole',
  );
  assert.equal(whole.ok, true, 'every read heard: proven');
});
