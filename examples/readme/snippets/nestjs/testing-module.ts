import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MemoryStore } from '@loom/core';
import { LoomModule } from '@loom/nestjs';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';
import { Mailer, OrdersService, SendReceipt } from './module.js';

@Module({ providers: [SendReceipt, Mailer, OrdersService] })
class OrdersModule {}

let t!: TestLoom;
const clock = new FakeClock();
const moduleRef = await Test.createTestingModule({
  imports: [
    LoomModule.forRoot({
      store: new MemoryStore(),
      clock,
      createLoom: async (options) => (t = await createTestLoom({ ...options, jobs: options.jobs ?? [], clock, start: false })).loom,
    }),
    OrdersModule,
  ],
}).compile();
const app = await moduleRef.init(); // the module starts the engine
await app.get(OrdersService).place('ada@example.com');
await t.runUntilIdle(); // t.advance('10m') for delays and retries
