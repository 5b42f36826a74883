import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keySlot, parseClusterSlots, redirection } from '../../src/driver/cluster-topology.ts';
import { checkConnectOptions } from '../../src/options/index.ts';

/** Asserts a TypeError whose message names the option and shows the value received. */
function rejects(options: object, option: string, shown: string): void {
  assert.throws(
    () => checkConnectOptions(options),
    (error: unknown) => {
      assert.ok(error instanceof TypeError, `TypeError expected, got ${String(error)}`);
      assert.ok(error.message.includes(`"${option}"`), `names ${option}: ${error.message}`);
      assert.ok(error.message.includes(shown), `shows ${shown}: ${error.message}`);
      return true;
    },
  );
}

describe('cluster, sentinel and durability options', () => {
  test('valid shapes are normalised to URLs', () => {
    const cluster = checkConnectOptions({
      cluster: { rootNodes: ['redis://a:7000', { url: 'redis://b:7001' }] },
    });
    assert.deepEqual(cluster.cluster, {
      rootNodes: ['redis://a:7000', 'redis://b:7001'],
      keyMajority: undefined,
    });
    const keys = checkConnectOptions({ cluster: { rootNodes: ['redis://a:7000'], keyMajority: 5 } });
    assert.equal(keys.cluster?.keyMajority, 5);
    const sentinel = checkConnectOptions({
      sentinel: { name: 'mymaster', sentinels: ['redis://s1:26379', { host: '::1', port: 26380 }] },
      durability: { replicas: 1 },
    });
    assert.deepEqual(sentinel.sentinel, {
      name: 'mymaster',
      sentinels: ['redis://s1:26379', 'redis://[::1]:26380'],
    });
    assert.deepEqual(sentinel.durability, { replicas: 1, timeout: 100 });
  });

  test('bad values name the option', () => {
    rejects({ cluster: 'redis://a:7000' }, 'cluster', '"redis://a:7000"');
    rejects({ cluster: { rootNodes: [] } }, 'cluster.rootNodes', 'an array');
    rejects({ cluster: { rootNodes: ['http://a'] } }, 'cluster.rootNodes', '"http://a"');
    rejects({ cluster: { rootNodes: ['redis://a:1'], nodes: 3 } }, 'cluster', 'an object');
    for (const keyMajority of [1, 2, 4, 11, '3', 3.5]) {
      rejects(
        { cluster: { rootNodes: ['redis://a:1'], keyMajority } },
        'cluster.keyMajority',
        String(keyMajority),
      );
    }
    rejects({ sentinel: { sentinels: ['redis://s:1'] } }, 'sentinel.name', 'undefined');
    rejects({ sentinel: { name: 'm', sentinels: [26379] } }, 'sentinel.sentinels', '26379');
    const sentinel = { name: 'm', sentinels: ['redis://s:1'] };
    rejects({ sentinel, durability: { replicas: 0 } }, 'durability.replicas', '0');
    rejects({ sentinel, durability: { replicas: 1, timeout: 0 } }, 'durability.timeout', '0');
    rejects({ sentinel, durability: 1 }, 'durability', '1');
  });

  test('topologies do not combine', () => {
    const cluster = { rootNodes: ['redis://a:1'] };
    const sentinel = { name: 'm', sentinels: ['redis://s:1'] };
    rejects({ cluster, sentinel }, 'sentinel', 'an object');
    rejects({ cluster, url: 'redis://x:1' }, 'url', '"redis://x:1"');
    rejects({ sentinel, client: {} }, 'client', 'an object');
    rejects({ durability: { replicas: 1 } }, 'durability', 'an object');
  });
});

describe('cluster slot helpers', () => {
  test('key slots follow the hash tag (values from CLUSTER KEYSLOT)', () => {
    assert.equal(keySlot('foo'), 12182);
    assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
    assert.equal(keySlot('lh:{name}'), keySlot('name'));
    assert.equal(keySlot('a{}b'), keySlot('a{}b'));
  });

  test('CLUSTER SLOTS and redirections parse', () => {
    const ranges = parseClusterSlots(
      [
        [0, 5460, ['', 7000, 'id']],
        [5461, 16383, ['10.0.0.2', 7001, 'id2']],
      ],
      'h',
    );
    assert.deepEqual(ranges, [
      { first: 0, last: 5460, address: 'h:7000' },
      { first: 5461, last: 16383, address: '10.0.0.2:7001' },
    ]);
    assert.deepEqual(redirection(new Error('MOVED 3999 127.0.0.1:6381')), {
      kind: 'MOVED',
      address: '127.0.0.1:6381',
    });
    assert.deepEqual(redirection(new Error('ASK 1 [::1]:7000')), { kind: 'ASK', address: '[::1]:7000' });
    assert.equal(redirection(new Error('ERR x')), undefined);
  });
});
