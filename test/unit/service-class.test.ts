// Issue 23 item 7: `leasehold doctor` names the service it detects and the mode leasehold runs in
// there. classifyService() is fed INFO texts shaped like each service's. Where they come from:
//   Redis, Valkey      INFO server of redis-server 7.2 / valkey-server 8.0 (the fields every release has)
//   ElastiCache        `os:Amazon ElastiCache`, `executable:-`, `gcc_version:0.0.0`: INFO replies
//                      users published from node-based clusters (AWS documents no INFO sample)
//   MemoryDB           `os:Amazon MemoryDB`: what valkey-io tooling checks for (no AWS sample found)
//   Dragonfly          the fields src/server/server_family.cc writes in its SERVER section
//   Garnet             the fields libs/server/Metrics/Info/GarnetInfoMetrics.cs writes
//   KeyDB              the fields src/server.cpp (v6.3.4) writes; `# KeyDB` / mvcc_depth only in full INFO
//   Upstash, Redis Cloud, Azure, ElastiCache Serverless: no documented INFO shape of their own;
//                      their endpoints' host names (each service's connection docs) tell them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  classifyService,
  engineOf,
  type ModeFacts,
  modeLine,
  parseInfo,
  serviceNotes,
} from '../../src/cli/service-class.ts';

const REDIS_72 = [
  '# Server',
  'redis_version:7.2.4',
  'redis_git_sha1:00000000',
  'redis_git_dirty:0',
  'redis_build_id:8f6ac3ab16fe7c3b',
  'redis_mode:standalone',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'arch_bits:64',
  'multiplexing_api:epoll',
  'process_id:1',
  'run_id:4d5e3c1f0d8e4b3a9c2f1e0d9c8b7a6f5e4d3c2b',
  'tcp_port:6379',
  'executable:/usr/bin/redis-server',
  'config_file:/etc/redis/redis.conf',
].join('\r\n');

const VALKEY_80 = [
  '# Server',
  'redis_version:7.2.4',
  'server_name:valkey',
  'valkey_version:8.0.1',
  'redis_mode:standalone',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'run_id:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b',
  'tcp_port:6379',
  'executable:/usr/bin/valkey-server',
].join('\r\n');

const ELASTICACHE_62 = [
  '# Server',
  'redis_version:6.2.5',
  'redis_git_sha1:0',
  'redis_git_dirty:0',
  'redis_build_id:0',
  'redis_mode:standalone',
  'os:Amazon ElastiCache',
  'arch_bits:64',
  'gcc_version:0.0.0',
  'process_id:1',
  'run_id:133863b990a0f0e29472afde545febd775fd624f',
  'tcp_port:6379',
  'executable:-',
  'config_file:-',
].join('\r\n');

const MEMORYDB = [
  '# Server',
  'redis_version:7.0.7',
  'redis_mode:cluster',
  'os:Amazon MemoryDB',
  'tcp_port:6379',
].join('\r\n');

const DRAGONFLY = [
  '# Server',
  'redis_version:7.4.0',
  'dragonfly_version:df-v1.25.1',
  'redis_mode:standalone',
  'arch_bits:64',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'thread_count:2',
  'multiplexing_api:iouring',
  'tcp_port:6379',
  'uptime_in_seconds:42',
  'uptime_in_days:0',
].join('\r\n');

const GARNET = [
  '# Server',
  'garnet_version:1.0.80',
  'server_name:garnet',
  'os:Unix 6.1.0.18',
  'processor_count:2',
  'arch_bits:64',
  'uptime_in_seconds:42',
  'uptime_in_days:0',
  'monitor_task:enabled',
  'run_id:0c3bd4b1c6f9b6d4b3f2a1e0d9c8b7a6f5e4d3c2',
  'redis_version:7.4.3',
  'redis_mode:standalone',
].join('\r\n');

const KEYDB_634 = [
  '# Server',
  'redis_version:6.3.4',
  'redis_git_sha1:00000000',
  'redis_mode:standalone',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'run_id:5b1d4c3a2f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c',
  'tcp_port:6379',
  'executable:/usr/local/bin/keydb-server',
  'config_file:/etc/keydb/keydb.conf',
  'availability_zone:',
  'features:cluster_mget',
].join('\r\n');

const classify = (host: string, text: string, errors: string[] = []) =>
  classifyService({ host, info: parseInfo(text), errors });

describe('classifyService: what doctor says the endpoint is', () => {
  test('a local Redis or Valkey is named as such, and as possibly an unidentified service', () => {
    const redis = classify('127.0.0.1', REDIS_72);
    assert.equal(redis.id, 'redis');
    assert.equal(redis.managed, false);
    assert.match(redis.name, /^self-hosted Redis, or a managed service that does not identify itself$/);
    assert.match(redis.detectedBy, /INFO redis_version; no managed-service trace/);
    const valkey = classify('localhost', VALKEY_80);
    assert.equal(valkey.id, 'valkey');
    assert.match(valkey.name, /^self-hosted Valkey/);
  });

  test('Memorystore (private IP, the engine own INFO) cannot be told apart: said honestly', () => {
    assert.equal(classify('10.128.0.5', REDIS_72).id, 'redis');
    assert.equal(classify('10.128.0.6', VALKEY_80).id, 'valkey');
  });

  test('ElastiCache: by its endpoint, serverless by its own endpoint shape, node-based also by INFO os', () => {
    const serverless = classify('serverless-test-lst4hg.serverless.use1.cache.amazonaws.com', VALKEY_80);
    assert.deepEqual(serverless, {
      id: 'elasticache-serverless',
      name: 'Amazon ElastiCache Serverless',
      managed: true,
      detectedBy: 'host name *.serverless.<region>.cache.amazonaws.com',
    });
    assert.equal(
      classify('my-cache-x2e9hv.public.serverless.use1.cache.amazonaws.com', VALKEY_80).id,
      'elasticache-serverless',
    );
    const nodes = classify('master.demo.abc123.use1.cache.amazonaws.com', ELASTICACHE_62);
    assert.equal(nodes.id, 'elasticache');
    assert.equal(nodes.detectedBy, 'host name *.cache.amazonaws.com');
    // Reached through a tunnel or an alias: INFO still names the platform.
    const tunnelled = classify('127.0.0.1', ELASTICACHE_62);
    assert.equal(tunnelled.id, 'elasticache');
    assert.equal(tunnelled.detectedBy, 'INFO os: Amazon ElastiCache');
    // A serverless cache's refusal of a keyless script gives it away behind an alias too.
    const refused = classify('cache.internal', VALKEY_80, [
      'ERR Lua scripts without any input keys are not supported.',
    ]);
    assert.equal(refused.id, 'elasticache-serverless');
  });

  test('MemoryDB by endpoint or INFO os', () => {
    assert.equal(
      classify('clustercfg.demo.abc123.memorydb.us-east-1.amazonaws.com', VALKEY_80).id,
      'memorydb',
    );
    assert.equal(classify('10.0.0.7', MEMORYDB).id, 'memorydb');
  });

  test('Azure: Azure Cache for Redis and Azure Managed Redis by endpoint', () => {
    assert.equal(classify('demo.redis.cache.windows.net', REDIS_72).id, 'azure-cache');
    assert.equal(classify('demo.redis.cache.chinacloudapi.cn', REDIS_72).id, 'azure-cache');
    assert.equal(classify('demo.westeurope.redis.azure.net', REDIS_72).id, 'azure-managed-redis');
    assert.equal(
      classify('demo.westeurope.redisenterprise.cache.azure.net', REDIS_72).id,
      'azure-managed-redis',
    );
  });

  test('Upstash and Redis Cloud by endpoint', () => {
    assert.equal(classify('eu1-happy-cat-12345.upstash.io', REDIS_72).name, 'Upstash');
    const cloud = classify('redis-12345.c1.us-east-1-2.ec2.redns.redis-cloud.com', REDIS_72);
    assert.equal(cloud.id, 'redis-cloud');
    assert.equal(classify('redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com', REDIS_72).id, 'redis-cloud');
  });

  test('Dragonfly, Garnet and KeyDB by their INFO fields, whatever their redis_version says', () => {
    const dragonfly = classify('127.0.0.1', DRAGONFLY);
    assert.deepEqual(
      [dragonfly.id, dragonfly.managed, dragonfly.detectedBy],
      ['dragonfly', false, 'INFO dragonfly_version'],
    );
    assert.equal(classify('127.0.0.1', GARNET).id, 'garnet');
    assert.equal(
      classify('127.0.0.1', 'redis_version:7.4.3\r\nserver_name:garnet').detectedBy,
      'INFO server_name',
    );
    const keydb = classify('127.0.0.1', KEYDB_634);
    assert.equal(keydb.id, 'keydb');
    assert.equal(keydb.detectedBy, 'INFO executable: /usr/local/bin/keydb-server');
    assert.equal(classify('127.0.0.1', `${REDIS_72}\r\n\r\n# KeyDB\r\nmvcc_depth:0`).id, 'keydb');
    assert.equal(classify('127.0.0.1', 'redis_version:255.255.255').id, 'keydb');
    // Dragonfly's refusal of an undeclared key names it when INFO does not.
    assert.equal(
      classify('10.0.0.9', 'redis_version:7.4.0', ['ERR script tried accessing undeclared key, key: k']).id,
      'dragonfly',
    );
  });

  test('a managed endpoint wins over the engine behind it (ElastiCache running Valkey is ElastiCache)', () => {
    assert.equal(classify('demo.abc123.ng.0001.euw1.cache.amazonaws.com', VALKEY_80).id, 'elasticache');
    assert.equal(classify('DEMO.Upstash.IO.', REDIS_72).id, 'upstash');
  });
});

describe('engineOf: the server line', () => {
  test('each product with its own version, not the redis_version it reports for old clients', () => {
    assert.deepEqual(engineOf(parseInfo(REDIS_72)), { product: 'Redis', version: '7.2.4' });
    assert.deepEqual(engineOf(parseInfo(VALKEY_80)), { product: 'Valkey', version: '8.0.1' });
    assert.deepEqual(engineOf(parseInfo(DRAGONFLY)), { product: 'Dragonfly', version: '1.25.1' });
    assert.deepEqual(engineOf(parseInfo(GARNET)), { product: 'Garnet', version: '1.0.80' });
    assert.deepEqual(engineOf(parseInfo(KEYDB_634)), { product: 'KeyDB', version: '6.3.4' });
    assert.deepEqual(engineOf({}), { product: 'Redis', version: '(version unknown)' });
  });
});

describe('modeLine and serviceNotes: what leasehold will do there', () => {
  const proven = (driver: string): ModeFacts => ({
    driver,
    notifications: 'tracking',
    trackingRule: 'read-keys',
    reason: null,
  });
  const polling = (
    driver: string,
    reason = 'CLIENT TRACKING refused: ERR unknown subcommand',
  ): ModeFacts => ({
    driver,
    notifications: 'polling',
    trackingRule: null,
    reason,
  });

  test('the mode line says how pushes travel with each driver, and the paths used in every mode', () => {
    assert.equal(
      modeLine(proven('node-redis')),
      'tracking, read-keys rule, pushes on the command connection (RESP3); scripts by EVALSHA; direct grants by PUBLISH/SUBSCRIBE',
    );
    assert.match(
      modeLine(proven('ioredis')),
      /pushes redirected to a RESP2 subscriber \(CLIENT TRACKING REDIRECT\)/,
    );
    assert.match(modeLine(proven('iovalkey')), /REDIRECT/);
    assert.match(
      modeLine(polling('node-redis')),
      /^polling \(waiters retry every retryDelay, holders check at each extension\); scripts by EVALSHA/,
    );
  });

  test('Redis Cloud: RESP3 only, no REDIRECT, 7.4 or later', () => {
    const cloud = classify('redis-1.c1.us-east-1-2.ec2.redns.redis-cloud.com', REDIS_72);
    const info = parseInfo(REDIS_72);
    const notes = serviceNotes(cloud, info, polling('ioredis'));
    assert.equal(notes.length, 2);
    assert.match(notes[0]!, /no REDIRECT\): ioredis polls there; --driver node-redis can have pushes/);
    assert.match(notes[1]!, /Redis 7\.4 or later; this one reports 7\.2\.4/);
    const recent = parseInfo('redis_version:7.4.2');
    assert.deepEqual(serviceNotes(cloud, recent, proven('node-redis')), []);
    const amr = classify('demo.westeurope.redis.azure.net', REDIS_72);
    assert.match(
      serviceNotes(amr, recent, polling('ioredis'))[0]!,
      /^Azure Managed Redis \(Redis Enterprise\)/,
    );
  });

  test('Dragonfly: node-redis is the driver with pushes; the fair lock needs undeclared keys allowed', () => {
    const dragonfly = classify('127.0.0.1', DRAGONFLY);
    const info = parseInfo(DRAGONFLY);
    const withIoredis = serviceNotes(dragonfly, info, polling('ioredis'));
    assert.equal(withIoredis.length, 2);
    assert.match(withIoredis[0]!, /no REDIRECT, BCAST or PREFIX/);
    assert.match(withIoredis[1]!, /--default_lua_flags=allow-undeclared-keys/);
    assert.equal(serviceNotes(dragonfly, info, proven('node-redis')).length, 1);
  });

  test('Garnet, Upstash, ElastiCache Serverless: polling expected, with the reason from their docs', () => {
    const garnet = serviceNotes(classify('127.0.0.1', GARNET), parseInfo(GARNET), polling('node-redis'));
    assert.deepEqual(garnet, [
      'Garnet has no CLIENT TRACKING: instances poll',
      'Garnet has no streams and no WAIT: elections and the durability option cannot run there',
    ]);
    const upstash = classify('x.upstash.io', REDIS_72);
    assert.match(serviceNotes(upstash, {}, polling('node-redis'))[0]!, /not in Upstash's command list/);
    assert.deepEqual(serviceNotes(upstash, {}, proven('node-redis')), []);
    const serverless = classify('c.serverless.use1.cache.amazonaws.com', VALKEY_80);
    assert.equal(serviceNotes(serverless, {}, polling('node-redis')).length, 2);
    assert.equal(serviceNotes(serverless, {}, proven('node-redis')).length, 1);
  });

  test('a server of its own gets no notes: the canary says it all', () => {
    for (const text of [REDIS_72, VALKEY_80, KEYDB_634]) {
      const info = parseInfo(text);
      assert.deepEqual(
        serviceNotes(classifyService({ host: '127.0.0.1', info }), info, polling('ioredis')),
        [],
      );
    }
  });
});
