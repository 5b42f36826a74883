// What leasehold says must never carry a password (issue 22, item 7), and an ACL refusal must
// name what is missing, even where Redis 7.0 does not.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redact } from '../../src/base/redact.ts';
import { ConnectError, Leasehold } from '../../src/index.ts';
import { aclHint } from '../../src/runners/failures.ts';
import { scripts } from '../../src/scripts/index.ts';
import { freePort } from '../harness/ports.ts';

describe('passwords stay out of messages', () => {
  test('redact hides the user info, also with "@" or "/" in the password, and ?password=', () => {
    assert.equal(redact('redis://user:pw@127.0.0.1:6379/2'), 'redis://***@127.0.0.1:6379/2');
    assert.equal(redact('rediss://:p@ss@host:6380'), 'rediss://***@host:6380');
    assert.equal(redact('redis://u:a/b@host:1'), 'redis://***@host:1');
    assert.equal(redact('redis://host:1/0?password=hunter2&db=1'), 'redis://host:1/0?password=***&db=1');
    assert.equal(redact('redis://127.0.0.1:6379'), 'redis://127.0.0.1:6379');
  });

  test('a URL refused by the option checks is shown without its password', async () => {
    const refused = [
      { url: 'redis://user:SECRET@127.0.0.1:99999' },
      { url: 'http://user:SECRET@127.0.0.1:1' },
      { nodes: ['redis://a:SECRET@h:1', 'redis://a:SECRET@h:2', 'redis://a:SECRET@h:x'] },
      { cluster: { rootNodes: ['http://a:SECRET@h:1'] } },
      { sentinel: { name: 'm', sentinels: ['http://a:SECRET@h:1'] } },
    ];
    for (const options of refused) {
      await assert.rejects(Leasehold.connect(options), (error: unknown) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, /\*\*\*@/);
        assert.doesNotMatch(error.message, /SECRET/);
        return true;
      });
    }
  });

  test('a ConnectError of every topology names the URLs without their passwords', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const url = `redis://user:SECRET@${closed}`;
    const topologies = [
      { url },
      { nodes: [url, `${url}/1`, `${url}/2`] },
      { cluster: { rootNodes: [url] } },
      { sentinel: { name: 'mymaster', sentinels: [url] } },
    ];
    for (const topology of topologies) {
      const error = await Leasehold.connect({ ...topology, connectTimeout: 1_000 }).catch((e: unknown) => e);
      assert.ok(error instanceof ConnectError, String(error));
      assert.match(error.message, /\*\*\*@127\.0\.0\.1/, error.message);
      assert.doesNotMatch(error.message, /SECRET/);
    }
  });
});

describe('ACL refusals name what is missing', () => {
  test("Redis 7.0's refusal inside a script is mapped to the command on the script's line", () => {
    const line =
      scripts.acquire.source.split('\n').findIndex((text) => text.includes("redis.call('TIME'")) + 1;
    assert.ok(line > 0);
    const message = `ERR The user executing the script can't run this command or subcommand script: ${scripts.acquire.sha}, on @user_script:${line}.`;
    assert.match(aclHint(message), /the ACL user lacks \+time; docs\/security\.md/);
  });

  test('Redis >= 7.2 and Valkey name it: that name is used; key refusals point at key patterns', () => {
    assert.match(
      aclHint(
        "ERR ACL failure in script: User u has no permissions to run the 'zadd' command script: 0000000000000000000000000000000000000000, on @user_script:1.",
      ),
      /lacks \+zadd/,
    );
    assert.match(
      aclHint("NOPERM this user has no permissions to run the 'evalsha' command"),
      /lacks \+evalsha/,
    );
    assert.match(
      aclHint('NOPERM this user has no permissions to access one of the keys used as arguments'),
      /key and channel patterns must cover leasehold's keys/,
    );
    assert.equal(aclHint('WRONGTYPE Operation against a key holding the wrong kind of value'), '');
  });
});
