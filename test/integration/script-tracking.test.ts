// Which keys each Lua script arms for the connection that ran it, on the server line this run
// uses (LEASEHOLD_REDIS_SERVER). Two tracking rules exist (../shared/DESIGN.md section 2):
// Redis <= 7.0 arms every declared key once the script reads anything, Redis >= 7.2 and Valkey
// arm exactly the keys the script reads. Every script therefore ends with reads of the keys its
// caller listens to; this file pins, per outcome, that those are armed (`must`), and on the
// read-keys rule exactly which keys are (`read`), so that an extra or a missing read shows up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadScript, type Script, scripts } from '../../src/scripts/index.ts';
import { armedBy, type Case } from '../harness/armed.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { redisServerVersion, serverTrackingRule } from '../harness/server-binary.ts';

let server: RedisServer;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
});

const script = (name: string): Script => loadScript(name);

/** The rule the server under test should follow, from its version. */
const expectedRule = serverTrackingRule;

const TTL = 10_000;
const far = () => Date.now() + 60_000;
// `mark`: the fence mark (a re-seed reads it, then writes it: no rule leaves it armed).
const rw = ['writer', 'readers', 'waiting', 'fence', 'released', 'mark'];
const fair = ['lock', 'queue', 'deadlines', 'arrivals', 'fence', 'turn', 'mark'];
const multi = ['a', 'a:fence', 'b', 'b:fence', 'c', 'c:fence', 'mark', 'mark', 'mark'];

const cases: Case[] = [
  {
    name: 'acquire, granted: the holder hears of its lock key',
    run: { script: scripts.acquire, keys: ['lock', 'fence', 'mark'], args: ['me', TTL] },
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'acquire, busy: the waiter hears of the lock key',
    run: { script: scripts.acquire, keys: ['lock', 'fence', 'mark'], args: ['me', TTL] },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'acquire, recorded (no grants), granted: the holder hears of its lock key',
    run: { script: scripts.acquireRecorded, keys: ['lock', 'fence', 'mark', 'recorded'], args: ['me', TTL] },
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'acquire, recorded (no grants), busy: the waiter hears of the lock key, not of the record',
    run: { script: scripts.acquireRecorded, keys: ['lock', 'fence', 'mark', 'recorded'], args: ['me', TTL] },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'multi-acquire, blocked, recording the waiter: it hears of the blocking lock key, not of the records',
    run: {
      script: script('multi-acquire'),
      keys: [...multi, 'a:multi', 'b:multi', 'c:multi'],
      args: ['me', TTL, '1'],
    },
    setup: [['SET', '@b', 'other', 'PX', TTL]],
    must: ['b'],
    read: ['a', 'b'],
  },
  {
    name: 'forceAcquire: the new holder hears of its lock key',
    run: { script: scripts.force, keys: ['lock', 'fence', 'mark'], args: ['me', TTL] },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'extend (also the re-check after a push): the holder hears of its lock key again',
    run: { script: scripts.extend, keys: ['lock'], args: ['me', TTL] },
    setup: [['SET', '@lock', 'me', 'PX', TTL]],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'release: the releaser listens to nothing',
    run: { script: scripts.release, keys: ['lock'], args: ['me'] },
    setup: [['SET', '@lock', 'me', 'PX', TTL]],
    must: [],
    read: [],
  },
  {
    name: 'quorum fence raise: the holder hears of its lock key',
    run: { script: scripts.fenceRaise, keys: ['lock', 'fence', 'mark'], args: ['me', 100] },
    setup: [['SET', '@lock', 'me', 'PX', TTL]],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'multi-acquire, granted: the holder hears of every lock key',
    run: { script: script('multi-acquire'), keys: multi, args: ['me', TTL] },
    must: ['a', 'b', 'c'],
    read: ['a', 'b', 'c'],
  },
  {
    name: 'multi-acquire, blocked: the waiter hears of the blocking lock key (and the free ones checked before it)',
    run: { script: script('multi-acquire'), keys: multi, args: ['me', TTL] },
    setup: [['SET', '@b', 'other', 'PX', TTL]],
    must: ['b'],
    read: ['a', 'b'],
  },
  {
    name: 'rwlock write, granted: the writer hears of the writer key',
    run: { script: script('rwlock-write'), keys: rw, args: ['w', TTL, '1'] },
    must: ['writer'],
    read: ['readers', 'writer'],
  },
  {
    name: 'rwlock write, blocked by a reader: the writer hears of the writer key and reader releases',
    run: { script: script('rwlock-write'), keys: rw, args: ['w', TTL, '1'] },
    setup: [['ZADD', '@readers', far(), 'r']],
    must: ['released', 'writer'],
    read: ['readers', 'released', 'writer'],
  },
  {
    name: 'rwlock write, blocked by a writer: the writer hears of the writer key and reader releases',
    run: { script: script('rwlock-write'), keys: rw, args: ['w', TTL, '1'] },
    setup: [['SET', '@writer', 'other', 'PX', TTL]],
    must: ['released', 'writer'],
    read: ['released', 'writer'],
  },
  {
    name: 'rwlock read, blocked by a writer: the reader hears of the writer key',
    run: { script: script('rwlock-read'), keys: rw, args: ['r', TTL] },
    setup: [['SET', '@writer', 'other', 'PX', TTL]],
    must: ['writer'],
    read: ['writer'],
  },
  {
    name: 'rwlock read, blocked by a waiting writer: the reader hears of the writer key and the waiting',
    run: { script: script('rwlock-read'), keys: rw, args: ['r', TTL] },
    setup: [['ZADD', '@waiting', far(), 'w']],
    must: ['waiting', 'writer'],
    read: ['waiting', 'writer'],
  },
  {
    name: 'semaphore, full: the waiter hears of the release counter',
    run: {
      script: script('semaphore-acquire'),
      keys: ['set', 'fence', 'released', 'mark'],
      args: ['me', 1, 1, TTL],
    },
    setup: [['ZADD', '@set', far(), 'other:1']],
    must: ['released'],
    read: ['released', 'set'],
  },
  {
    name: 'acquire, busy, registering for a direct grant: the waiter hears of the lock key',
    run: {
      script: scripts.acquire,
      keys: ['lock', 'fence', 'mark', 'waiters', 'grants'],
      args: ['me', TTL, `ch\n${TTL}\n1`],
    },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['lock'],
    // The queue and records are written last (PEXPIRE after their PTTL): not armed.
    read: ['lock'],
  },
  {
    name: 'acquire, granted by a release on its way: the holder hears of its lock key',
    run: {
      script: scripts.acquire,
      keys: ['lock', 'fence', 'mark', 'waiters', 'grants'],
      args: ['me', TTL, `ch\n${TTL}\n2`],
    },
    setup: [
      ['SET', '@lock', 'me', 'PX', TTL],
      ['HSET', '@grants', 'me', '=7\n1'],
    ],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'semaphore, full, registering for a direct grant: the waiter hears of the release counter',
    run: {
      script: script('semaphore-acquire'),
      keys: ['set', 'fence', 'released', 'mark', 'waiters', 'grants'],
      args: ['me', 1, 1, TTL, `ch\n${TTL}\n1\n1\n1`],
    },
    setup: [['ZADD', '@set', far(), 'other:1']],
    must: ['released'],
    // The queue and records are written last (PEXPIRE after their PTTL): not armed.
    read: ['released', 'set'],
  },
  {
    name: 'semaphore, granted by a release on its way: the waiter hears of the release counter',
    run: {
      script: script('semaphore-acquire'),
      keys: ['set', 'fence', 'released', 'mark', 'waiters', 'grants'],
      args: ['me', 1, 1, TTL, `ch\n${TTL}\n2\n1\n1`],
    },
    setup: [
      ['ZADD', '@set', far(), 'me:1'],
      ['HSET', '@grants', 'me', '=7\n1'],
    ],
    must: ['released'],
    // The claim rewrites this holder's member of the set after reading it: only the counter stays armed.
    read: ['released'],
  },
  {
    name: 'fair lock, granted: the holder hears of its lock key',
    run: { script: script('fair-acquire'), keys: fair, args: ['me', TTL, TTL, '@turn:', '1'] },
    must: ['lock'],
    read: ['deadlines', 'lock', 'queue'],
  },
  {
    name: 'fair lock, queued: the waiter hears of its own turn key',
    run: { script: script('fair-acquire'), keys: fair, args: ['me', TTL, TTL, '@turn:', '1'] },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['turn'],
    read: ['lock', 'turn'],
  },
  {
    name: 'fair lock, queued, registering for a direct grant: the waiter hears of its own turn key',
    run: {
      script: script('fair-acquire'),
      keys: [...fair, 'grants'],
      args: ['me', TTL, TTL, '@turn:', '1', `ch\n${TTL}\n1`],
    },
    setup: [['SET', '@lock', 'other', 'PX', TTL]],
    must: ['turn'],
    read: ['lock', 'turn'],
  },
  {
    name: 'fair lock, granted by a release on its way: the holder hears of its lock key',
    run: {
      script: script('fair-acquire'),
      keys: [...fair, 'grants'],
      args: ['me', TTL, TTL, '@turn:', '1', `ch\n${TTL}\n2`],
    },
    setup: [
      ['SET', '@lock', 'me', 'PX', TTL],
      ['HSET', '@grants', 'me', '=7\n1'],
    ],
    must: ['lock'],
    read: ['lock'],
  },
  {
    name: 'rwlock write, blocked by a reader, registering for a direct grant: the writer hears of the writer key and reader releases',
    run: { script: script('rwlock-write'), keys: [...rw, 'grants'], args: ['w', TTL, '1', `ch\n${TTL}\n1`] },
    setup: [['ZADD', '@readers', far(), 'r']],
    must: ['released', 'writer'],
    read: ['readers', 'released', 'writer'],
  },
  {
    name: 'rwlock write, granted by a release on its way: the writer hears of the writer key',
    run: { script: script('rwlock-write'), keys: [...rw, 'grants'], args: ['w', TTL, '1', `ch\n${TTL}\n2`] },
    setup: [
      ['SET', '@writer', 'w', 'PX', TTL],
      ['HSET', '@grants', 'w', '=7\n1'],
    ],
    must: ['writer'],
    read: ['writer'],
  },
  {
    name: 'rwlock read, blocked by a writer, registering for a direct grant: the reader hears of the writer key',
    run: {
      script: script('rwlock-read'),
      keys: [...rw, 'rqueue', 'rgrants'],
      args: ['r', TTL, `ch\n${TTL}\n1`],
    },
    setup: [['SET', '@writer', 'other', 'PX', TTL]],
    must: ['writer'],
    // The records are read for a grant, then written (PEXPIRE after their PTTL), as the queue
    // is: neither is armed, nor are the readers.
    read: ['writer'],
  },
  {
    name: 'rwlock read, blocked by a waiting writer, registering for a direct grant: the reader hears of the writer key and the waiting',
    run: {
      script: script('rwlock-read'),
      keys: [...rw, 'rqueue', 'rgrants'],
      args: ['r', TTL, `ch\n${TTL}\n1`],
    },
    setup: [['ZADD', '@waiting', far(), 'w']],
    must: ['waiting', 'writer'],
    read: ['waiting', 'writer'],
  },
  {
    name: 'rwlock read, granted by a release on its way: a reader listens to nothing but resets',
    run: {
      script: script('rwlock-read'),
      keys: [...rw, 'rqueue', 'rgrants'],
      args: ['r', TTL, `ch\n${TTL}\n2`],
    },
    setup: [
      ['ZADD', '@readers', far(), 'r'],
      ['HSET', '@rgrants', 'r', '=7\n1'],
    ],
    must: [],
    // The claim rewrites this reader's member after reading it: nothing stays armed, as a reader needs.
    read: [],
  },
  {
    name: 'election, elected: the leader hears of the leader key',
    run: {
      script: script('election-campaign'),
      keys: ['leader', 'fence', 'log', 'mark'],
      args: ['me', 'v', TTL, 100],
    },
    must: ['leader'],
    read: ['leader'],
  },
  {
    name: 'election, led by another: the candidate hears of the leader key',
    run: {
      script: script('election-campaign'),
      keys: ['leader', 'fence', 'log', 'mark'],
      args: ['me', 'v', TTL, 100],
    },
    setup: [['HSET', '@leader', 'token', 'other', 'value', 'x', 'fence', '1']],
    must: ['leader'],
    read: ['leader'],
  },
  {
    name: 'election extend: the leader hears of the leader key again',
    run: { script: script('election-extend'), keys: ['leader', 'log'], args: ['me', TTL] },
    setup: [['HSET', '@leader', 'token', 'me', 'value', 'x', 'fence', '1']],
    must: ['leader'],
    read: ['leader'],
  },
  {
    name: 'election observe: the observer hears of the log',
    run: { script: script('election-observe'), keys: ['leader', 'log'], args: ['', 100, 100] },
    setup: [['XADD', '@log', '*', 'type', 'elected', 'fence', '1', 'value', 'x']],
    must: ['log'],
    read: ['leader', 'log'],
  },
];

describe(`which keys each script arms (${redisServerVersion()})`, () => {
  test(`the server follows the ${expectedRule()} rule`, async () => {
    const probe = { source: "return redis.call('GET', KEYS[1])", name: 'probe', sha: '' };
    const { heard } = await armedBy(server.url, { script: probe, keys: ['read', 'declared'], args: [] });
    assert.deepEqual(heard, expectedRule() === 'read-keys' ? ['read'] : ['declared', 'read']);
  });

  for (const c of cases) {
    test(c.name, async () => {
      const { heard, reply } = await armedBy(server.url, c.run, c.setup);
      for (const key of c.must)
        assert.ok(heard.includes(key), `${key} not armed (heard ${heard}, reply ${reply})`);
      if (expectedRule() === 'read-keys') assert.deepEqual(heard, c.read, `reply ${JSON.stringify(reply)}`);
    });
  }
});
