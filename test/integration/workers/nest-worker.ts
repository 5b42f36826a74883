// A replica running a NestJS application context (the real @nestjs/core, @nestjs/common and
// @nestjs/schedule) with LeaseholdModule and a job under @Cron + @WithLock, for
// test/integration/frameworks.test.ts. Decorators are applied as TypeScript's legacy decorator
// output applies them (Reflect.decorate, bottom up).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { LeaseholdModule, WithLock } from '../../../src/frameworks/nestjs.ts';
import { ConnectionClosedError, Leasehold } from '../../../src/index.ts';
import { parentChannel } from '../../harness/worker.ts';

const [url, prefix, seconds] = process.argv.slice(2) as [string, string, string];
const channel = parentChannel();

class Jobs {
  async tick(): Promise<void> {
    channel.send({ type: 'ran', second: Math.round(Date.now() / 1_000) });
  }
}
const tick = Object.getOwnPropertyDescriptor(Jobs.prototype, 'tick')!;
Object.defineProperty(
  Jobs.prototype,
  'tick',
  Reflect.decorate(
    [Cron('* * * * * *'), WithLock('tick', { skipIfHeld: true, minHold: 900 })],
    Jobs.prototype,
    'tick',
    tick,
  ) as PropertyDescriptor,
);
Injectable()(Jobs);

class AppModule {}
Module({ imports: [ScheduleModule.forRoot(), LeaseholdModule.forRoot({ url, prefix })], providers: [Jobs] })(
  AppModule,
);

const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
const lh = app.get(Leasehold);
channel.send({ type: 'ready' });
setTimeout(async () => {
  await app.close();
  // Closed with the application: the instance refuses new calls.
  const after = await lh.tryAcquire('after').then(
    () => 'open',
    (error: unknown) => (error instanceof ConnectionClosedError ? 'closed' : String(error)),
  );
  channel.send({ type: 'done', instance: after });
}, Number(seconds) * 1_000);
