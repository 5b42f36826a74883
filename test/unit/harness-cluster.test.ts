import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createCluster } from 'redis';
import { keySlot, RedisCluster } from '../harness/cluster.ts';
import { command, parseFields, pipeline } from '../harness/resp.ts';

describe('RedisCluster', { timeout: 40_000 }, () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 1 });
  });
  after(() => cluster?.stop());

  async function clusterClient() {
    const client = createCluster({ rootNodes: cluster.rootNodes });
    client.on('error', () => {});
    await client.connect();
    return client;
  }

  test('forms 3 masters covering every slot, each with one replica in sync', async () => {
    assert.equal(cluster.masters.length, 3);
    assert.equal(cluster.replicas.length, 3);
    const covered = cluster.masters.flatMap((master) => master.slots).sort(([a], [b]) => a - b);
    let next = 0;
    for (const [first, last] of covered) {
      assert.equal(first, next);
      next = last + 1;
    }
    assert.equal(next, 16_384);
    for (const master of cluster.masters) assert.equal(cluster.replicasOf(master).length, 1);
    for (const node of cluster.nodes) {
      const state = parseFields(String(await command(node.port, ['CLUSTER', 'INFO'])));
      assert.equal(state['cluster_state'], 'ok');
      assert.equal(state['cluster_known_nodes'], '6');
    }
  });

  test('keySlot agrees with CLUSTER KEYSLOT, hash tags included', async () => {
    const port = cluster.nodes[0]?.port ?? 0;
    for (const key of ['foo', 'lock:{orders}:fence', '{user1000}.following', 'a{}b', 'é{x}', '{}{x}']) {
      assert.equal(keySlot(key), await command(port, ['CLUSTER', 'KEYSLOT', key]), key);
    }
  });

  test('keys written through a cluster-aware client live on masterFor(key)', async () => {
    const client = await clusterClient();
    try {
      const keys = ['alpha', 'beta', 'gamma', 'delta', '{lock}:a', '{lock}:b'];
      for (const key of keys) await client.set(key, `value-${key}`);
      for (const key of keys) {
        assert.equal(await command(cluster.masterFor(key).port, ['GET', key]), `value-${key}`);
      }
      assert.ok(new Set(keys.map((key) => cluster.masterFor(key).port)).size > 1, 'keys spread over masters');
    } finally {
      client.destroy();
    }
  });

  test('failover kills the master and promotes its replica', async (t) => {
    const key = 'harness-failover';
    const master = cluster.masterFor(key);
    const [replica] = cluster.replicasOf(master);
    assert.ok(replica);
    const [set, acked] = await pipeline(master.port, [
      ['SET', key, 'kept'],
      ['WAIT', 1, 2_000],
    ]);
    assert.deepEqual([set, acked], ['OK', 1]);
    const started = Date.now();
    const promoted = await cluster.failover(master);
    const took = Date.now() - started;
    assert.equal(promoted.id, replica.id);
    assert.equal(promoted.role, 'master');
    assert.equal(cluster.masterFor(key).id, replica.id);
    assert.equal(cluster.nodes.find((node) => node.id === master.id)?.alive, false);
    assert.equal(await command(promoted.port, ['GET', key]), 'kept');
    const client = await clusterClient();
    try {
      assert.equal(await client.get(key), 'kept');
    } finally {
      client.destroy();
    }
    t.diagnostic(`failover took ${took} ms`);
  });
});
