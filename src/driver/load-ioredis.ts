import type { Redis } from 'ioredis';
import { missingPackage } from './connect-errors.ts';
import { asError } from './types.ts';

/** The client class of ioredis, or of iovalkey (Valkey's fork of it: the same API and options). */
export type RedisClass = typeof Redis;

/**
 * Loads `pkg`'s client class, or fails saying which package to install. iovalkey is typed as
 * ioredis: its API is ioredis's, which is what the driver relies on (and what its tests check).
 */
export async function loadIoredis(pkg: 'ioredis' | 'iovalkey'): Promise<RedisClass> {
  try {
    const mod = (await import(pkg)) as { Redis?: RedisClass; default?: RedisClass };
    const found = mod.Redis ?? mod.default;
    if (typeof found !== 'function') throw new Error(`the "${pkg}" package exports no Redis client class`);
    return found;
  } catch (error) {
    throw new Error(missingPackage(error, pkg) ?? asError(error).message, { cause: error });
  }
}
