// `leasehold doctor` end to end: a real CLI process against a redis-server this file starts, once
// as a user allowed CLIENT TRACKING and once as one denied it by ACL.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { addUserWithoutTracking } from '../harness/acl.ts';
import { CLI } from '../harness/cli.ts';
import { mode, testDriver, tracking, useRedis } from '../harness/leasehold.ts';
import { redisServerVersion } from '../harness/server-binary.ts';

const redis = useRedis({ prepare: (server) => addUserWithoutTracking(server.port) });

/** Runs `leasehold doctor --json` against `url`; resolves with the exit code and the report. */
async function doctor(url: string): Promise<{ code: number; report: Record<string, unknown> }> {
  const run = promisify(execFile);
  const args = [...CLI, 'doctor', '--redis', url, '--driver', testDriver, '--json'];
  const { code, stdout } = await run(process.execPath, args).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  return { code, report: JSON.parse(stdout) as Record<string, unknown> };
}

describe(`leasehold doctor (${mode})`, {
  skip: !tracking && 'the CLI does not take a notification mode',
}, () => {
  test('a server that delivers pushes: tracking, its version and tracking rule, exit 0', async () => {
    const { code, report } = await doctor(redis.server.url);
    assert.equal(code, 0);
    assert.equal(report['server'], redisServerVersion());
    assert.equal(report['notifications'], 'tracking');
    const [product, version = ''] = redisServerVersion().split(' ');
    const newer = product === 'Valkey' || Number(version.split('.')[0]) >= 8 || version.startsWith('7.2');
    assert.equal(report['trackingRule'], newer ? 'read-keys' : 'declared-keys');
    assert.equal(typeof report['roundTripMs'], 'number');
    assert.equal(report['reason'], null);
    // Issue 23 item 7: a local server is named for what it is, and not taken for a managed service.
    const service = report['service'] as Record<string, unknown>;
    assert.equal(service['id'], product === 'Valkey' ? 'valkey' : 'redis');
    assert.equal(service['managed'], false);
    assert.match(String(service['name']), new RegExp(`^self-hosted ${product}, or a managed service`));
    const via =
      testDriver === 'node-redis' ? 'on the command connection' : 'redirected to a RESP2 subscriber';
    assert.match(
      String(report['mode']),
      new RegExp(`^tracking, ${report['trackingRule']} rule, pushes ${via}`),
    );
    assert.deepEqual(report['notes'], []);
  });

  test('a user denied CLIENT TRACKING: polling, the reason, exit 78; the password is not printed', async () => {
    const { code, report } = await doctor(`redis://notrack:secret@127.0.0.1:${redis.server.port}`);
    assert.equal(code, 78);
    assert.equal(report['notifications'], 'polling');
    assert.match(String(report['reason']), /CLIENT TRACKING refused: NOPERM/);
    assert.doesNotMatch(String(report['url']), /secret/);
    assert.match(String(report['mode']), /^polling \(waiters retry every retryDelay/);
  });
});
