// The docs' code blocks and examples/ run as written (issue 13, item 11): each block that needs
// only one Redis runs against this file's redis-server (the compile check is the unit suite's),
// and each example runs with `node --import tsx`, importing 'leasehold' as users do.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
// @ts-expect-error: a plain .mjs script without type declarations
import { check, execute } from '../../scripts/check-doc-samples.mjs';
import { RedisCluster } from '../harness/cluster.ts';
import { PgDatabase } from '../harness/postgres.ts';
import { RedisServer } from '../harness/redis-server.ts';

const root = resolve(import.meta.dirname, '..', '..');
let server: RedisServer;
/** Started for the examples that need a cluster (they read REDIS_CLUSTER). */
let cluster: RedisCluster | undefined;
/** Created for the examples that need PostgreSQL (they read DATABASE_URL). */
let postgres: PgDatabase | undefined;
before(async () => {
  server = await RedisServer.start();
});
after(async () => {
  await server.stop();
  await cluster?.stop();
  await postgres?.drop();
});

describe('documentation runs as written', () => {
  test('every README and docs/ block that needs one Redis runs and exits 0', async () => {
    // execute() runs the files check() compiled, through check()'s tsconfig.
    assert.ok((check() as { ok: boolean }).ok);
    const { count, ok, output } = (await execute(server.url)) as {
      count: number;
      ok: boolean;
      output: string;
    };
    assert.ok(ok, output);
    assert.ok(count > 20, `${count} blocks run`);
  });

  for (const example of readdirSync(join(root, 'examples')).filter((file) => file.endsWith('.ts'))) {
    test(`examples/${example} imports 'leasehold' and runs`, async () => {
      const source = readFileSync(join(root, 'examples', example), 'utf8');
      assert.match(source, /from 'leasehold'/);
      assert.doesNotMatch(source, /from '\.\.\/src\//);
      const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: server.url };
      if (source.includes('DATABASE_URL')) {
        postgres ??= await PgDatabase.create();
        env['DATABASE_URL'] = postgres.url;
      }
      if (source.includes('REDIS_CLUSTER')) {
        cluster ??= await RedisCluster.start({ masters: 3, replicasPerMaster: 0 });
        env['REDIS_CLUSTER'] = cluster.rootNodes[0]!.url;
      }
      await promisify(execFile)(process.execPath, ['--import', 'tsx', join('examples', example)], {
        cwd: root,
        env,
        timeout: 30_000,
      });
    });
  }
});
