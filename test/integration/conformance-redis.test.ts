import { multiLockConformance, oneStore } from '../conformance/multilock.conformance.ts';
import { type ConformanceTarget, mutexConformance } from '../conformance/mutex.conformance.ts';
import { primitivesConformance } from '../conformance/primitives.conformance.ts';
import { connect, mode } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

async function redisTarget(): Promise<ConformanceTarget> {
  const server = await RedisServer.start();
  return {
    connect: (options) => connect(server, options),
    del: async (key) => {
      await command(server.port, ['DEL', key]);
    },
    setWithTtl: async (key, value, ttl) => {
      await command(server.port, ['SET', key, value, 'PX', ttl]);
    },
    command: (args) => command(server.port, args),
    close: () => server.stop(),
  };
}

mutexConformance(`redis (${mode})`, redisTarget);
primitivesConformance(`redis (${mode})`, redisTarget);
multiLockConformance(`redis (${mode})`, async () => oneStore(await redisTarget()));
