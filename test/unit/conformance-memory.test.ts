import type { ConnectOptions } from '../../src/index.ts';
import { Leasehold, MemoryBackend } from '../../src/index.ts';
import { MemoryDriver } from '../../src/memory/driver.ts';
import { multiLockConformance, oneStore } from '../conformance/multilock.conformance.ts';
import { type ConformanceTarget, mutexConformance } from '../conformance/mutex.conformance.ts';
import { primitivesConformance } from '../conformance/primitives.conformance.ts';

/** A fresh store; `extra` options (polling) for every instance connected to it. */
async function memoryTarget(extra: ConnectOptions = {}): Promise<ConformanceTarget> {
  const backend = new MemoryBackend();
  // Another "connection" to the store, as another program would have one to Redis.
  const raw = new MemoryDriver(backend, false);
  await raw.connect();
  return {
    connect: (options) => Leasehold.connect({ ...options, backend, ...extra }),
    del: async (key) => {
      await raw.command(['DEL', key]);
    },
    setWithTtl: async (key, value, ttl) => {
      await raw.command(['SET', key, value, 'PX', String(ttl)]);
    },
    command: (args) => raw.command(args.map(String)),
    close: () => raw.close(),
  };
}

const polling: ConnectOptions = { notifications: 'polling', retryDelay: 20 };

mutexConformance('memory', () => memoryTarget());
mutexConformance('memory (polling)', () => memoryTarget(polling));
primitivesConformance('memory', () => memoryTarget());
primitivesConformance('memory (polling)', () => memoryTarget(polling));
multiLockConformance('memory', async () => oneStore(await memoryTarget()));
multiLockConformance('memory (polling)', async () => oneStore(await memoryTarget(polling)));
