// The operator's commands on every topology the library connects to (issue 26, item 1): status,
// top and release --force with --cluster, --sentinel and --nodes, against the harness's real
// servers. top follows pushes from every master of a Cluster (BCAST per master) and, on a
// quorum, shows each node's copy and the names a node lacks (under-replicated).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Leasehold, LockLostError } from '../../src/index.ts';
import { leasehold } from '../harness/cli.ts';
import { RedisCluster } from '../harness/cluster.ts';
import { aborted, lockKey, mode, testDriver, tracking, uniquePrefix, within } from '../harness/leasehold.ts';
import { type Masters, startMasters } from '../harness/masters.ts';
import { command } from '../harness/resp.ts';
import { SentinelSet } from '../harness/sentinel.ts';

const open: Leasehold[] = [];
after(async () => {
  await Promise.all(open.map((lh) => lh.close()));
});

async function connect(options: Parameters<typeof Leasehold.connect>[0]): Promise<Leasehold> {
  const lh = await Leasehold.connect({ driver: testDriver, ttl: 5_000, ...options });
  open.push(lh);
  return lh;
}

/** `leasehold <args> --prefix <prefix> --driver <driver>`; exit 0 expected. */
async function cli(prefix: string, args: string[], until?: string): Promise<string> {
  const out = await leasehold([...args, '--prefix', prefix, '--driver', testDriver], {
    ...(until === undefined ? {} : { until }),
  });
  assert.equal(out.code, 0, out.stderr);
  return out.stdout;
}

/** The JSON lines `top --json` printed. */
const lines = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe(`the CLI on a Redis Cluster (${mode})`, {
  skip: tracking ? false : 'the Cluster runs in tracking mode',
}, () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
  });
  after(async () => {
    await cluster?.stop();
  });

  test('status, top (pushes from every master) and release --force', async () => {
    const prefix = uniquePrefix('clt');
    const rootNodes = cluster.rootNodes.map(({ url }) => url);
    const flag = ['--cluster', rootNodes.join(',')];
    const lh = await connect({ cluster: { rootNodes }, prefix });
    const names = Array.from({ length: 9 }, (_, i) => `job:${i}`);
    const masters = new Set(names.map((n) => cluster.masterFor(lockKey(prefix, n)).id));
    assert.ok(masters.size >= 2, 'the names spread over several masters');
    const leases = await Promise.all(names.map((n) => lh.acquire(n, { owner: `w-${n}` })));

    const status = await cli(prefix, ['status', 'job:4', ...flag]);
    assert.match(status, /holder +w-job:4: fencing token/);
    assert.match(status, /notify +tracking/);

    // top sees every name at start, then a change on each master as it happens.
    const top = leasehold(['top', 'job:', '--json', ...flag, '--prefix', prefix, '--driver', testDriver], {
      until: '"name":"job:8","primitive":"mutex"',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await leases[8]!.release();
    const again = await lh.acquire('job:8', { owner: 'second' });
    const out = await top;
    assert.equal(out.code, 0, out.stderr);
    const events = lines(out.stdout);
    const ready = events.find((e) => e['event'] === 'ready');
    assert.equal(ready?.['names'], names.length);
    assert.equal(ready?.['mode'], 'tracking');
    assert.ok(
      events.some((e) => e['event'] === 'entry' && e['name'] === 'job:8'),
      out.stdout,
    );

    const freed = JSON.parse(await cli(prefix, ['release', '--force', 'job:8', '--json', ...flag])) as {
      freed: { owner: string }[];
    };
    assert.deepEqual(
      freed.freed.map((f) => f.owner),
      ['second'],
    );
    assert.ok((await within(aborted(again.signal), 1_000, 'the holder aborts')) instanceof LockLostError);
    await Promise.all(leases.slice(0, 8).map((l) => l.release()));
  });
});

describe(`the CLI on a quorum of masters (${mode})`, () => {
  let masters: Masters;
  before(async () => {
    masters = await startMasters(3);
  });
  after(async () => {
    await masters?.stopAll();
  });

  test("status and top show each node's copy and an under-replicated name; release --force frees every node", async () => {
    const prefix = uniquePrefix('qct');
    const flag = ['--nodes', masters.urls.join(',')];
    // Polling, with a long TTL: the holder puts a lost copy back at its next extension (30 s
    // away) instead of at once on the push, so the node stays without it while the CLI looks
    // (three CLI runs: seconds each on a loaded machine; 10 s away was once not enough).
    const lh = await connect({ nodes: [...masters.urls], prefix, notifications: 'polling', ttl: 90_000 });
    const lease = await lh.acquire('payout', { owner: 'q-holder' });
    const other = await lh.acquire('report', { owner: 'q-other' });
    // One node loses the key (restarted empty, or a hand's DEL): a majority still holds it.
    const [first] = masters.servers;
    await masters.everyNodeHas(lockKey(prefix, 'payout'));
    await command(first!.port, ['DEL', lockKey(prefix, 'payout')]);

    const status = await cli(prefix, ['status', 'payout', ...flag]);
    // (Its fencing token shows only where a majority of its copies' counters agree.)
    assert.match(status, /holder +q-holder: /);
    assert.match(status, /nodes +3, a majority is 2/);
    assert.match(status, /missing \(no copy\)/);
    assert.match(status, /under-replicated: 1 of 3 nodes lack the holder's key/);

    const top = await cli(prefix, ['top', '--json', ...flag], '"event":"ready"');
    const snapshot = lines(top).filter((e) => e['event'] === 'entry');
    const payout = snapshot.find((e) => e['name'] === 'payout');
    assert.deepEqual(payout?.['copies'], { on: 2, of: 3 });
    assert.equal(payout?.['underReplicated'], true);
    assert.equal(snapshot.find((e) => e['name'] === 'report')?.['underReplicated'], false);

    const freed = JSON.parse(await cli(prefix, ['release', '--force', 'payout', '--json', ...flag])) as {
      freed: { owner: string; nodes: string[] }[];
    };
    assert.equal(freed.freed[0]?.owner, 'q-holder');
    assert.equal(freed.freed[0]?.nodes.length, 2, 'freed on the two nodes that had it');
    for (const server of masters.servers) {
      assert.equal(await command(server.port, ['EXISTS', lockKey(prefix, 'payout')]), 0);
    }
    // (Polling with a 90 s TTL, it would learn at its next extension, 30 s away.)
    assert.equal(await lease.release(), false, 'no copy left to release: the CLI freed them');
    await other.release();
    // run takes the lock through Leasehold.connect({ nodes }), as the library would.
    const ran = await leasehold([
      'run',
      'nightly',
      ...flag,
      '--prefix',
      prefix,
      '--driver',
      testDriver,
      '--',
      process.execPath,
      '-e',
      'console.log(process.env.LEASEHOLD_LOCK)',
    ]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /nightly/);
  });
});

describe(`the CLI behind Redis Sentinel (${mode})`, {
  skip: tracking ? false : 'Sentinel runs in tracking mode',
}, () => {
  let set: SentinelSet;
  before(async () => {
    set = await SentinelSet.start();
  });
  after(async () => {
    await set?.stop();
  });

  test('status and release --force on the master the sentinels name', async () => {
    const prefix = uniquePrefix('sct');
    const flag = ['--sentinel', `${set.masterName}@${set.sentinelUrls.join(',')}`];
    const lh = await connect({ sentinel: { name: set.masterName, sentinels: set.sentinelUrls }, prefix });
    const lease = await lh.acquire('cron', { owner: 's-holder' });
    assert.match(await cli(prefix, ['status', 'cron', ...flag]), /holder +s-holder: fencing token/);
    assert.match(
      await cli(prefix, ['release', '--force', 'cron', ...flag]),
      /^released mutex "cron"\n +s-holder/,
    );
    assert.ok((await within(aborted(lease.signal), 1_000, 'the holder aborts')) instanceof LockLostError);
  });
});

describe('topology flags', () => {
  test('one topology at a time; commands that read one Redis refuse the others', async () => {
    const both = await leasehold([
      'status',
      'x',
      '--redis',
      'redis://127.0.0.1:1',
      '--nodes',
      'redis://a,redis://b,redis://c',
    ]);
    assert.equal(both.code, 64);
    assert.match(both.stderr, /--redis and --nodes: give one of them/);
    const badSentinel = await leasehold(['status', 'x', '--sentinel', 'redis://127.0.0.1:26379']);
    assert.equal(badSentinel.code, 64);
    assert.match(badSentinel.stderr, /--sentinel must be <master-name>@<url>/);
    const doctor = await leasehold(['doctor', '--cluster', 'redis://127.0.0.1:1']);
    assert.equal(doctor.code, 64);
    assert.match(doctor.stderr, /doctor takes one Redis \(--redis or \$REDIS_URL\), not --cluster/);
    // watch follows a name on every topology (top's live view): an unreachable cluster is exit 69.
    const watch = await leasehold(['watch', 'x', '--cluster', 'redis://127.0.0.1:1']);
    assert.equal(watch.code, 69, watch.stderr);
  });
});
