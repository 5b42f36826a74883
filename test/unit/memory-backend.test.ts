// The in-memory store's Redis emulation: the data types and commands the scripts use, and
// client tracking. The primitives on top of it are covered by the conformance suites
// (conformance-memory.test.ts), which run the same tests against a real Redis.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Leasehold, MemoryBackend } from '../../src/index.ts';
import { MemoryDriver } from '../../src/memory/driver.ts';
import type { Script } from '../../src/scripts/index.ts';

/** A connection to `backend` that records the invalidation pushes it receives. */
async function connection(backend: MemoryBackend, tracking = true) {
  const driver = new MemoryDriver(backend, tracking);
  const pushes: (string[] | null)[] = [];
  driver.setHandlers({
    invalidate: (keys) => pushes.push(keys === null ? null : [...keys]),
    reset() {},
    disconnected() {},
    proven() {},
  });
  await driver.connect();
  const run = (...args: (string | number)[]) => driver.command(args.map(String));
  /** Pushes delivered so far (they arrive on a microtask, as from a socket), then forgotten. */
  const heard = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    return pushes.splice(0);
  };
  return { driver, run, heard };
}

/** A script of src/scripts/, by name, or inline Lua. */
const script = (name: string, source?: string): Script => ({
  name,
  source: source ?? readFileSync(new URL(`../../src/scripts/${name}.lua`, import.meta.url), 'utf8'),
  sha: '',
});

describe('memory backend', () => {
  test('every primitive runs on backend: "memory" (MemoryBackend.shared)', async () => {
    const lh = await Leasehold.connect({ backend: 'memory', prefix: `shared-${process.pid}` });
    try {
      const permit = await lh.semaphore('s', { limit: 2 }).acquire({ permits: 2 });
      const read = await lh.readWriteLock('r').read();
      const turn = await lh.fairLock('f').acquire();
      const term = await lh.election('e').campaign('me');
      assert.equal((await lh.election('e').leader())?.value, 'me');
      for (const lease of [permit, read, turn, term]) assert.equal(await lease.release(), true);
    } finally {
      await lh.close();
    }
  });

  test('sorted sets: order by score then member, score ranges, NX/XX, removal when empty', async () => {
    const { run } = await connection(new MemoryBackend());
    assert.equal(await run('ZADD', 'z', 2, 'b', 1, 'c', 2, 'a'), 3);
    assert.deepEqual(await run('ZRANGE', 'z', 0, -1), ['c', 'a', 'b']);
    assert.deepEqual(await run('ZRANGE', 'z', -1, -1, 'WITHSCORES'), ['b', '2']);
    assert.deepEqual(await run('ZRANGE', 'z', 5, 9), []);
    assert.deepEqual(await run('ZRANGEBYSCORE', 'z', '(1', '+inf'), ['a', 'b']);
    assert.equal(await run('ZCOUNT', 'z', '-inf', '(2'), 1);
    assert.equal(await run('ZADD', 'z', 'NX', 9, 'a'), 0);
    assert.equal(await run('ZSCORE', 'z', 'a'), '2');
    assert.equal(await run('ZADD', 'z', 'XX', 1.5, 'a', 7, 'new'), 0);
    assert.equal(await run('ZSCORE', 'z', 'a'), '1.5');
    assert.equal(await run('ZSCORE', 'z', 'new'), null);
    assert.equal(await run('ZADD', 'none', 'XX', 1, 'x'), 0);
    assert.equal(await run('EXISTS', 'none'), 0, 'ZADD XX creates nothing');
    await assert.rejects(run('ZADD', 'z', 'one', 'x'), /not a valid float/);
    assert.equal(await run('PEXPIRE', 'z', 60_000), 1);
    assert.equal(await run('ZREMRANGEBYSCORE', 'z', '-inf', 1.5), 2);
    assert.ok(((await run('PTTL', 'z')) as number) > 59_000, 'the TTL is the whole key’s');
    assert.equal(await run('ZCARD', 'z'), 1);
    assert.equal(await run('ZREM', 'z', 'b', 'missing'), 1);
    assert.equal(await run('EXISTS', 'z'), 0, 'an emptied sorted set is deleted');
    assert.equal(await run('PTTL', 'z'), -2);
    await run('ZADD', 'z', 1, 'again');
    assert.equal(await run('PTTL', 'z'), -1, 'a re-created key has no TTL');
  });

  test('hashes: HSET counts new fields, HMGET, HDEL deletes an emptied hash; WRONGTYPE', async () => {
    const { run } = await connection(new MemoryBackend());
    assert.equal(await run('HSET', 'h', 'a', '1', 'b', '2'), 2);
    assert.equal(await run('HSET', 'h', 'a', '3'), 0);
    assert.equal(await run('HGET', 'h', 'a'), '3');
    assert.deepEqual(await run('HMGET', 'h', 'b', 'zz'), ['2', null]);
    assert.deepEqual(await run('HMGET', 'nothing', 'a'), [null]);
    assert.equal(await run('TYPE', 'h'), 'hash');
    await assert.rejects(run('GET', 'h'), /^Error: WRONGTYPE/);
    await assert.rejects(run('ZADD', 'h', 1, 'x'), /^Error: WRONGTYPE/);
    await assert.rejects(run('INCR', 'h'), /^Error: WRONGTYPE/);
    assert.equal(await run('HDEL', 'h', 'a', 'b'), 2);
    assert.equal(await run('EXISTS', 'h'), 0);
    await run('SET', 'h', 'plain');
    assert.equal(await run('TYPE', 'h'), 'string', 'SET replaces a key of any type');
  });

  test('streams: increasing IDs on the store clock, MAXLEN, exclusive ranges, COUNT', async () => {
    const { run } = await connection(new MemoryBackend());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await run('XADD', 's', 'MAXLEN', '~', 3, '*', 'n', i)) as string);
    for (let i = 1; i < ids.length; i++) {
      const [ms, seq] = ids[i]!.split('-').map(Number) as [number, number];
      const [pms, pseq] = ids[i - 1]!.split('-').map(Number) as [number, number];
      assert.ok(ms > pms || (ms === pms && seq === pseq + 1), `${ids[i - 1]} then ${ids[i]}`);
    }
    const [time] = (await run('TIME')) as [string, string];
    assert.ok(Math.abs(Number(ids[0]!.split('-')[0]) / 1000 - Number(time)) <= 2);
    assert.equal(await run('XLEN', 's'), 3);
    assert.deepEqual(await run('XRANGE', 's', '-', '+'), [
      [ids[2], ['n', '2']],
      [ids[3], ['n', '3']],
      [ids[4], ['n', '4']],
    ]);
    assert.deepEqual(await run('XRANGE', 's', `(${ids[3]}`, '+', 'COUNT', 10), [[ids[4], ['n', '4']]]);
    assert.deepEqual(await run('XREVRANGE', 's', '+', '-', 'COUNT', 1), [[ids[4], ['n', '4']]]);
    assert.deepEqual(await run('XRANGE', 'missing', '-', '+'), []);
    await assert.rejects(
      run('XADD', 's', '1-1', 'n', 'x'),
      /equal or smaller than the target stream top item/,
    );
    assert.equal(await run('EXISTS', 's'), 1);
  });

  test('TIME: the process clock in µs, never going back, not moved by a faked Date.now', async () => {
    const { run } = await connection(new MemoryBackend());
    const micros = async () => {
      const [s, us] = (await run('TIME')) as [string, string];
      assert.match(us, /^\d{1,6}$/);
      return Number(s) * 1e6 + Number(us);
    };
    const first = await micros();
    assert.ok(Math.abs(first / 1000 - Date.now()) < 1_000);
    const realNow = Date.now;
    Date.now = () => realNow() - 3_600_000;
    try {
      let last = first;
      for (let i = 0; i < 50; i++) {
        const next = await micros();
        assert.ok(next >= last);
        last = next;
      }
      assert.ok(last - first < 1_000_000);
    } finally {
      Date.now = realNow;
    }
  });

  test('tracking: one push per read, none to the writer itself, none for a write that changed nothing', async () => {
    const backend = new MemoryBackend();
    const a = await connection(backend);
    const b = await connection(backend);
    await b.run('ZADD', 'z', 1, 'm');
    await a.run('ZCARD', 'z');
    await a.run('ZADD', 'z', 2, 'own');
    assert.deepEqual(await a.heard(), [], 'NOLOOP: its own write is not reported to the writer');
    await a.run('ZSCORE', 'z', 'm');
    await b.run('ZREM', 'z', 'absent');
    await b.run('ZADD', 'z', 'XX', 1, 'm');
    await b.run('ZREMRANGEBYSCORE', 'z', 5, 6);
    assert.deepEqual(await a.heard(), [], 'writes that change nothing are not changes');
    await b.run('ZADD', 'z', 3, 'm');
    await b.run('ZADD', 'z', 4, 'm');
    assert.deepEqual(await a.heard(), [['z']], 'one push, then nothing until the next read');
    await a.run('HGET', 'h', 'f');
    await b.run('HSET', 'h', 'f', 'v');
    await a.run('XRANGE', 's', '-', '+');
    await b.run('XADD', 's', '*', 'f', 'v');
    assert.deepEqual(await a.heard(), [['h'], ['s']]);
    await a.run('EXISTS', 'z');
    await b.run('PEXPIRE', 'z', 30);
    assert.deepEqual(await a.heard(), [['z']]);
    await a.run('PTTL', 'z');
    await sleep(80);
    assert.deepEqual(await a.heard(), [['z']], 'expiry of a sorted set is reported (on time)');
    const untracked = await connection(backend, false);
    await untracked.run('GET', 'k');
    await b.run('SET', 'k', 'v');
    assert.deepEqual(await untracked.heard(), []);
  });

  test('a script arms tracking of exactly the keys its reads touched, as Redis >= 7.2 does', async () => {
    const backend = new MemoryBackend();
    const a = await connection(backend);
    const b = await connection(backend);
    // semaphore-count reads only the set (ZCOUNT): the other declared key is not tracked.
    await a.driver.eval({ script: script('semaphore-count'), keys: ['set', 'other'], args: [] });
    await b.run('SET', 'other', 'x');
    await b.run('ZADD', 'set', 1, 'm');
    assert.deepEqual(await a.heard(), [['set']]);
    // rwlock-withdraw only writes (ZREM): nothing is tracked.
    await a.driver.eval({ script: script('rwlock-withdraw'), keys: ['set'], args: ['m'] });
    await b.run('ZADD', 'set', 1, 'm');
    assert.deepEqual(await a.heard(), []);
    // A read, then the script's own write: disarmed again (with no push to itself, NOLOOP).
    const readThenWrite = script(
      'inline',
      "redis.call('GET', KEYS[1]) return redis.call('SET', KEYS[1], 'v')",
    );
    assert.equal(await a.driver.eval({ script: readThenWrite, keys: ['k'], args: [] }), 'OK');
    await b.run('SET', 'k', 'w');
    assert.deepEqual(await a.heard(), []);
  });

  test('a script error replies as Redis words it; the store keeps what ran before it', async () => {
    const { driver, run } = await connection(new MemoryBackend());
    const failing = script('inline', "redis.call('SET', KEYS[1], 'v') return redis.call('INCR', KEYS[1])");
    await assert.rejects(
      driver.eval({ script: failing, keys: ['k'], args: [] }),
      /^Error: ERR value is not an integer or out of range script: [0-9a-f]{40}, on @user_script:1\.$/,
    );
    assert.equal(await run('GET', 'k'), 'v', 'no rollback, as on Redis');
    await assert.rejects(
      driver.eval({ script: script('inline', 'return +'), keys: [], args: [] }),
      /^Error: ERR Error compiling script \(new function\): user_script:1: unexpected symbol near '\+'$/,
    );
  });
});

test('inside one script the store has one clock: a key cannot exist for one read and be gone for the next', () => {
  // Redis checks expiry against the script's start time. The fair lock's script reads EXISTS
  // and then PTTL of the lock: a key expiring between the two gave PTTL -2 for a key that
  // existed, and the waiter slept for its fallback timer (a conformance run failed on it).
  const store = new MemoryBackend();
  store.set('k', 'v', { px: 5 });
  const [before, after] = store.atomically(() => {
    const first = store.get('k');
    const until = performance.now() + 15;
    while (performance.now() < until) {
      // Let the key's TTL run out in real time, mid-script.
    }
    return [first, store.pttl('k')];
  });
  assert.equal(before, 'v');
  assert.ok(after >= 0, `PTTL inside the same script is ${after}, not -2`);
  assert.equal(store.get('k'), null, 'expired once the script is over');
});
