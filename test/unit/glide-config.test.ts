// The pure parts of the Valkey GLIDE driver: the client configuration a URL gives, GLIDE's error
// texts put back in the shape the other clients give (the engine reads NOSCRIPT, NOPERM, WRONGPASS
// from them), and the RESP2 reader of the Watch connection.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { connectError, glideConfig, serverError } from '../../src/driver/glide-config.ts';
import { encode, readReplies } from '../../src/driver/resp.ts';
import { isErrorReply, isNoScript } from '../../src/driver/types.ts';

describe('GLIDE configuration from a URL', () => {
  test('host, port, user, password, database; requests bounded twice the command timeout', () => {
    const config = glideConfig({ url: 'redis://alice:p%40ss@cache.internal:6380/3', tracking: false }, 5_000);
    assert.deepEqual(config.addresses, [{ host: 'cache.internal', port: 6380 }]);
    assert.deepEqual(config.credentials, { username: 'alice', password: 'p@ss' });
    assert.equal(config.databaseId, 3);
    assert.equal(config.useTLS, undefined);
    assert.equal(config.requestTimeout, 10_000);
    assert.equal(config.advancedConfiguration?.connectionTimeout, 5_000);
  });

  test('rediss:// is TLS, with tls.ca as root certificates; IPv6 brackets dropped; default port', () => {
    const config = glideConfig({ url: 'rediss://[::1]', tracking: false, tls: { ca: ['A', 'B'] } }, 1_000);
    assert.deepEqual(config.addresses, [{ host: '::1', port: 6379 }]);
    assert.equal(config.useTLS, true);
    assert.equal(config.advancedConfiguration?.tlsAdvancedConfiguration?.rootCertificates, 'A\nB');
  });

  test('what GLIDE cannot do is a TypeError naming the option', () => {
    assert.throws(
      () => glideConfig({ url: 'rediss://h', tracking: false, tls: { cert: 'c', key: 'k' } }, 1_000),
      /TypeError: tls\.cert and tls\.key/,
    );
    assert.throws(
      () => glideConfig({ url: 'rediss://h', tracking: false, tls: { servername: 'x' } }, 1_000),
      /TypeError: tls\.servername/,
    );
  });
});

describe("GLIDE's errors in the other clients' shape", () => {
  const glide = (kind: string, text: string) =>
    new Error(`An error was signalled by the server: - ${kind}: ${text}`);

  test('a server reply gets its code back', () => {
    const noScript = serverError(glide('NoScriptError', 'No matching script. Please use EVAL.'));
    assert.ok(isNoScript(noScript), noScript.message);
    assert.equal(serverError(glide('PermissionDenied', 'nope')).message, 'NOPERM nope');
    assert.equal(serverError(glide('ResponseError', 'syntax error')).message, 'ERR syntax error');
    assert.ok(isErrorReply(serverError(glide('ResponseError', 'syntax error'))));
    // A script's own error_reply('NOPERM ...') keeps a single code.
    assert.equal(serverError(glide('PermissionDenied', 'NOPERM x')).message, 'NOPERM x');
  });

  test('anything else is left as it is', () => {
    const other = new Error('Connection closed');
    assert.equal(serverError(other), other);
    assert.equal(
      serverError(glide('SomethingNew', 'x')).message,
      'An error was signalled by the server: - SomethingNew: x',
    );
  });

  test("a refused handshake names the server's refusal", () => {
    const failed = new Error(
      'Connection error: Standalone(Received error for address `127.0.0.1:6379`: WRONGPASS: invalid username-password pair or user is disabled.\n)',
    );
    assert.equal(
      connectError(failed).message,
      'WRONGPASS invalid username-password pair or user is disabled.',
    );
    const timedOut = new Error('Connection error: Standalone(Received error for address `h:1`: timed out\n)');
    assert.equal(connectError(timedOut), timedOut);
  });
});

describe('RESP2 for the Watch', () => {
  test('commands as arrays of bulk strings, byte lengths of UTF-8', () => {
    assert.equal(encode(['SUBSCRIBE', 'é']), '*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\né\r\n');
  });

  test('replies read across chunk boundaries: arrays, bulk, null, integers, errors', () => {
    const wire = Buffer.from(
      '*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n+OK\r\n-NOPERM no\r\n*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$-1\r\n',
    );
    let rest: Buffer = Buffer.alloc(0);
    const all: unknown[] = [];
    for (let i = 0; i < wire.length; i += 5) {
      const { replies, rest: left } = readReplies(Buffer.concat([rest, wire.subarray(i, i + 5)]));
      all.push(...replies);
      rest = left;
    }
    assert.equal(rest.length, 0);
    assert.deepEqual(all.slice(0, 2), [['subscribe', 'c', 1], 'OK']);
    assert.ok(all[2] instanceof Error && all[2].message === 'NOPERM no');
    assert.deepEqual(all[3], ['message', 'c', null]);
  });
});
