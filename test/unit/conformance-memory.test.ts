import { Leasehold, MemoryBackend } from '../../src/index.ts';
import { mutexConformance } from '../conformance/mutex.conformance.ts';

mutexConformance('memory', async () => {
  const backend = new MemoryBackend();
  return {
    connect: (options) => Leasehold.connect({ ...options, backend }),
    del: async (key) => {
      backend.del(key);
    },
    setWithTtl: async (key, value, ttl) => {
      backend.set(key, value, { px: ttl });
    },
    close: async () => {},
  };
});

mutexConformance('memory (polling)', async () => {
  const backend = new MemoryBackend();
  return {
    connect: (options) =>
      Leasehold.connect({ ...options, backend, notifications: 'polling', retryDelay: 20 }),
    del: async (key) => {
      backend.del(key);
    },
    setWithTtl: async (key, value, ttl) => {
      backend.set(key, value, { px: ttl });
    },
    close: async () => {},
  };
});
