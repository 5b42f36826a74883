/**
 * `leasehold/nestjs`: one Leasehold instance for a NestJS application, injectable by its class and
 * closed when the application shuts down, and `@WithLock()` for methods that must run in one
 * process at a time, such as `@Cron()` jobs on every replica (docs/scheduled-jobs.md).
 *
 * @example
 * @Module({ imports: [LeaseholdModule.forRoot({ url: process.env.REDIS_URL })] })
 * class AppModule {}
 *
 * class Reports {
 *   @Cron('0 * * * * *')
 *   @WithLock('report', { skipIfHeld: true, minHold: 50_000 })
 *   async report() {}
 * }
 */

import type { DynamicModule, FactoryProvider, ModuleMetadata } from '@nestjs/common';
import { Global, Module } from '@nestjs/common';
import type { Lease } from '../lease.ts';
import { Leasehold } from '../leasehold.ts';
import type { ConnectOptions } from '../options/index.ts';
import { checkKnownKeys, checkName, checkObject, fail, MAX_TTL } from '../options/index.ts';

/** The instance `@WithLock()` uses: the one the last LeaseholdModule made. */
let current: Leasehold | undefined;

/** Closes the instance when the application shuts down (Nest calls this hook on providers). */
const LIFECYCLE = Symbol('leasehold lifecycle');

export interface LeaseholdModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // biome-ignore lint/suspicious/noExplicitAny: Nest passes the injected providers, typed by `inject`
  useFactory: (...args: any[]) => ConnectOptions | Promise<ConnectOptions>;
  inject?: FactoryProvider['inject'];
}

/**
 * The module: `forRoot(connectOptions)` or `forRootAsync({ useFactory, inject })` connects once,
 * provides the instance under the `Leasehold` class (inject it as `constructor(lh: Leasehold)`),
 * globally, and closes it on application shutdown.
 */
// biome-ignore lint/complexity/noStaticOnlyClass: NestJS modules are classes; forRoot() is their convention
export class LeaseholdModule {
  static forRoot(options: ConnectOptions = {}): DynamicModule {
    return LeaseholdModule.#module({ provide: Leasehold, useFactory: () => connect(options) });
  }

  static forRootAsync(options: LeaseholdModuleAsyncOptions): DynamicModule {
    const o = checkObject(options, 'options');
    checkKnownKeys(o, ['useFactory', 'inject', 'imports'], 'LeaseholdModule.forRootAsync options');
    if (typeof options.useFactory !== 'function') fail('useFactory', 'a function', options.useFactory);
    const provider: FactoryProvider<Promise<Leasehold>> = {
      provide: Leasehold,
      useFactory: async (...args: unknown[]) => connect(await options.useFactory(...args)),
      inject: options.inject ?? [],
    };
    return { ...LeaseholdModule.#module(provider), imports: options.imports ?? [] };
  }

  static #module(provider: FactoryProvider<Leasehold | Promise<Leasehold>>): DynamicModule {
    const lifecycle: FactoryProvider = {
      provide: LIFECYCLE,
      useFactory: (lh: Leasehold) => ({ onApplicationShutdown: () => lh.close() }),
      inject: [Leasehold],
    };
    return { module: LeaseholdModule, global: true, providers: [provider, lifecycle], exports: [Leasehold] };
  }
}
// Nest's decorators, applied as functions: no decorator syntax in the library's own build.
Global()(LeaseholdModule);
Module({})(LeaseholdModule);

async function connect(options: ConnectOptions): Promise<Leasehold> {
  const lh = await Leasehold.connect(options);
  current = lh;
  return lh;
}

export interface WithLockOptions {
  /** Another process holds it: return undefined at once instead of waiting (a scheduled job). */
  skipIfHeld?: boolean;
  /** How long to wait for it (without skipIfHeld). @default Infinity */
  timeout?: number;
  /** The lease's TTL. @default the instance's */
  ttl?: number;
  /** Keep the name taken this long after the grant, at least (AcquireOptions.minHold). */
  minHold?: number;
  /** Who holds it, as inspection shows it. @default the instance's */
  owner?: string;
}

/**
 * Runs the decorated method holding the lock `name` (or `name(...args)`), released when it returns
 * or throws; with `skipIfHeld`, a call that finds it held returns undefined without running. The
 * lease is the LeaseholdModule's instance's. Put it below `@Cron()` (decorators apply bottom up);
 * metadata other decorators set on the method is carried over either way.
 */
export function WithLock(
  name: string | ((...args: never[]) => string),
  options: WithLockOptions = {},
): MethodDecorator {
  if (typeof name !== 'function') checkName(name, 'name');
  const o = checkObject(options, 'options');
  checkKnownKeys(o, ['skipIfHeld', 'timeout', 'ttl', 'minHold', 'owner'], 'WithLock options');
  if (o['skipIfHeld'] !== undefined && typeof o['skipIfHeld'] !== 'boolean') {
    fail('skipIfHeld', 'true or false', o['skipIfHeld']);
  }
  const { skipIfHeld = false, timeout, ...lease } = options;
  if (timeout !== undefined && skipIfHeld) fail('timeout', 'left out with skipIfHeld (one attempt)', timeout);
  if (lease.minHold !== undefined && (typeof lease.minHold !== 'number' || lease.minHold > MAX_TTL)) {
    fail('minHold', `a number of milliseconds <= ${MAX_TTL}`, lease.minHold);
  }
  return (_target, key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as ((...args: unknown[]) => unknown) | undefined;
    if (typeof original !== 'function')
      throw new TypeError(`leasehold: @WithLock() decorates methods; ${String(key)} is not one`);
    const wrapped = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const lh = current;
      if (lh === undefined)
        throw new TypeError('leasehold: @WithLock() needs LeaseholdModule.forRoot() imported');
      const lockName = typeof name === 'function' ? (name as (...a: unknown[]) => string)(...args) : name;
      if (!skipIfHeld)
        return lh.withLock(lockName, () => original.apply(this, args), {
          ...lease,
          ...(timeout === undefined ? {} : { timeout }),
        });
      const held: Lease | undefined = await lh.tryAcquire(lockName, lease);
      if (held === undefined) return undefined;
      try {
        return await original.apply(this, args);
      } finally {
        await held.release().catch(() => {});
      }
    };
    carryMetadata(original, wrapped);
    descriptor.value = wrapped;
    return descriptor;
  };
}

/** Metadata set on the method before (reflect-metadata, which Nest applications load) goes with it. */
function carryMetadata(from: object, to: object): void {
  const reflect = Reflect as unknown as {
    getMetadataKeys?: (target: object) => unknown[];
    getMetadata?: (key: unknown, target: object) => unknown;
    defineMetadata?: (key: unknown, value: unknown, target: object) => void;
  };
  if (reflect.getMetadataKeys === undefined || reflect.defineMetadata === undefined) return;
  for (const key of reflect.getMetadataKeys(from))
    reflect.defineMetadata(key, reflect.getMetadata?.(key, from), to);
}
