import { mutexConformance } from '../conformance/mutex.conformance.ts';
import { connect, mode } from '../harness/leasehold.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { command } from '../harness/resp.ts';

mutexConformance(`redis (${mode})`, async () => {
  const server = await RedisServer.start();
  return {
    connect: (options) => connect(server, options),
    del: async (key) => {
      await command(server.port, ['DEL', key]);
    },
    setWithTtl: async (key, value, ttl) => {
      await command(server.port, ['SET', key, value, 'PX', ttl]);
    },
    close: () => server.stop(),
  };
});
