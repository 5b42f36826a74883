import { randomUUID } from 'node:crypto';
import type { Leasehold } from '../../src/index.ts';
import { mutexKeys } from '../../src/primitives/mutex.ts';
import { until } from './poll.ts';
import { RedisServer, type RedisServerOptions } from './redis-server.ts';
import { command } from './resp.ts';

/** N independent redis-server processes, e.g. for quorum (Redlock-style) locks. */
export interface Masters {
  readonly servers: readonly RedisServer[];
  readonly urls: readonly string[];
  /**
   * Waits until every server has `key`. A quorum acquisition resolves once a majority has its
   * key; the last node's write may land later (under load, after a test's own DEL of it).
   */
  everyNodeHas(key: string): Promise<void>;
  /**
   * Waits until `lh` (connected with `prefix`) reaches every server. Leasehold.connect in quorum
   * mode resolves once a majority is connected, the others connecting in the background; a test
   * that uses the instance at once and needs every node (a conformance premise) could meet the
   * last one still connecting, and then any one slow reply is a lost majority (a Bun rehearsal:
   * a multiLock tryAcquire got "only 1 of 3 nodes answered", one of the two a NotSentError).
   */
  everyNodeConnected(lh: Leasehold, prefix: string): Promise<void>;
  /** Kills every server (by its own pid) and waits until all are gone. */
  stopAll(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts `n` unrelated masters on free ports, in parallel. If any fails to start, the others are
 * stopped before the error is rethrown.
 */
export async function startMasters(
  n: number,
  options: Omit<RedisServerOptions, 'port'> = {},
): Promise<Masters> {
  const started = await Promise.allSettled(Array.from({ length: n }, () => startServer(options)));
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stopAll = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  const failure = started.find((result) => result.status === 'rejected');
  if (failure !== undefined) {
    await stopAll();
    throw failure.reason;
  }
  const everyNodeHas = async (key: string) => {
    await until(
      `${key} on every node`,
      async () => {
        for (const server of servers) if ((await command(server.port, ['EXISTS', key])) !== 1) return false;
        return true;
      },
      { timeout: 5_000, interval: 5 },
    );
  };
  const everyNodeConnected = async (lh: Leasehold, prefix: string) => {
    // A fencing counter on every node: inspect() answers for the name on each node it reaches and
    // reports an error for each it cannot. A name per call: instances connecting at once under
    // one prefix each wait for their own.
    const name = `every-node-probe-${randomUUID()}`;
    const counter = mutexKeys(prefix, name).fence;
    await Promise.all(servers.map((server) => command(server.port, ['SET', counter, '1', 'PX', 10_000])));
    await until(
      'the instance connected to every node',
      async () => {
        const nodes = (await lh.inspect(name, { primitive: 'mutex' }))?.nodes;
        return nodes?.length === servers.length && nodes.every((node) => node.error === undefined);
      },
      { timeout: 5_000, interval: 10 },
    );
    await Promise.all(servers.map((server) => command(server.port, ['DEL', counter])));
  };
  return {
    servers,
    urls: servers.map((server) => server.url),
    everyNodeHas,
    everyNodeConnected,
    stopAll,
    [Symbol.asyncDispose]: stopAll,
  };
}

/**
 * `RedisServer.start` on a free port, retried when the port was taken between the kernel handing
 * it out and redis-server binding it (several servers start at once in the topologies).
 */
export async function startServer(options: RedisServerOptions = {}, attempts = 3): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await RedisServer.start(options);
    } catch (error) {
      const taken = /Address already in use/i.test(String(error));
      if (!taken || options.port !== undefined || attempt >= attempts) throw error;
    }
  }
}
