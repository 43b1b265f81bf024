import 'reflect-metadata';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module, Scope, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, Loom, MemoryStore, type JobContext } from '@loom/core';
import { InjectLoom, LoomModule } from '@loom/nestjs';
import { CaptureLogger, FakeClock } from '@loom/testing';
import { enqueueAndWait } from './nest-harness.js';

@Injectable()
class Mailer {
  readonly sent: string[] = [];
  send(to: string): void {
    this.sent.push(to);
  }
}

@Injectable()
@Job({ name: 'send-receipt', queue: 'emails' })
class SendReceipt {
  constructor(private readonly mailer: Mailer) {}
  async run(payload: { email: string }): Promise<void> {
    this.mailer.send(payload.email);
  }
}

/** A job that enqueues a follow-up: it injects the engine that runs it. */
@Injectable()
@Job({ name: 'place-order' })
class PlaceOrder {
  constructor(@InjectLoom() private readonly loom: Loom) {}
  async run(payload: { email: string }, ctx: JobContext): Promise<string> {
    const { id } = await this.loom.enqueue(SendReceipt, payload, { idempotencyKey: `receipt:${ctx.jobId}` });
    return id;
  }
}

/** Transient providers have no shared instance; the engine gets its own, built in their module. */
@Injectable({ scope: Scope.TRANSIENT })
class Stamp {
  readonly value = 'stamped';
}

@Injectable({ scope: Scope.TRANSIENT })
@Job({ name: 'stamp-invoice' })
class StampInvoice {
  constructor(private readonly stamp: Stamp) {}
  async run(): Promise<string> {
    return this.stamp.value;
  }
}

@Module({ providers: [Stamp, StampInvoice] })
class InvoicesModule {}

@Injectable()
class OrdersService {
  constructor(@InjectLoom() readonly loom: Loom) {}
}

/** A feature module providing its own jobs, as a Nest app would split them. */
@Module({ providers: [Mailer, SendReceipt, PlaceOrder, OrdersService], exports: [Mailer, OrdersService] })
class OrdersModule {}

/** Stands in for a config module: a provider the async factory injects. */
@Injectable()
class AppConfig {
  readonly concurrency = 3;
  readonly store = new MemoryStore();
}

@Module({ providers: [AppConfig], exports: [AppConfig] })
class ConfigModule {}

/** Test engines: a FakeClock (nothing fires by itself) and logs kept in memory. */
const quiet = () => ({ clock: new FakeClock(), logger: new CaptureLogger() });
let app: INestApplicationContext | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('LoomModule.forRoot', () => {
  it('builds @Job providers with their Nest dependencies and runs them once the application is initialised', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [LoomModule.forRoot({ store: new MemoryStore(), ...quiet() }), OrdersModule] }).compile();
    app = await moduleRef.init();
    const loom = app.get(Loom);
    const { status } = await enqueueAndWait(loom, SendReceipt, { email: 'ada@example.com' });
    expect(status).toBe('completed');
    expect(app.get(Mailer).sent).toEqual(['ada@example.com']);
  });

  it('gives the same engine to @InjectLoom(), app.get(Loom) and a job that enqueues follow-ups', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [LoomModule.forRoot({ store: new MemoryStore(), ...quiet() }), OrdersModule] }).compile();
    app = await moduleRef.init();
    const loom = app.get(Loom);
    expect(app.get(OrdersService).loom).toBe(loom);
    const { id, status } = await enqueueAndWait(loom, PlaceOrder, { email: 'grace@example.com' });
    expect(status).toBe('completed');
    const receiptId = (await loom.getJob(id))!.result as string;
    expect((await loom.getJob(receiptId))?.name).toBe('send-receipt');
  });

  it('runs the provider a test substitutes for a job class', async () => {
    const ran: string[] = [];
    const moduleRef = await Test.createTestingModule({ imports: [LoomModule.forRoot({ store: new MemoryStore(), ...quiet() }), OrdersModule] })
      .overrideProvider(SendReceipt)
      .useValue({ run: async (p: { email: string }) => void ran.push(p.email) })
      .compile();
    app = await moduleRef.init();
    await enqueueAndWait(app.get(Loom), SendReceipt, { email: 'fake@example.com' });
    expect(ran).toEqual(['fake@example.com']);
    expect(app.get(Mailer).sent).toEqual([]);
  });

  it('builds a transient job provider with its dependencies, through the module that provides it', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [LoomModule.forRoot({ store: new MemoryStore(), ...quiet() }), InvoicesModule] }).compile();
    app = await moduleRef.init();
    const loom = app.get(Loom);
    const { id, status } = await enqueueAndWait(loom, StampInvoice);
    expect(status).toBe('completed');
    expect((await loom.getJob(id))?.result).toBe('stamped');
  });

  it('runs only the jobs listed in `jobs` when given', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [LoomModule.forRoot({ store: new MemoryStore(), jobs: [SendReceipt], ...quiet() }), OrdersModule],
    }).compile();
    app = await moduleRef.init();
    await expect(app.get(Loom).enqueue(PlaceOrder, { email: 'x@example.com' })).rejects.toThrow(/Job class PlaceOrder is not registered/);
    expect((await enqueueAndWait(app.get(Loom), SendReceipt, { email: 'x@example.com' })).status).toBe('completed');
  });
});

describe('LoomModule.forRootAsync', () => {
  it('takes its options from a factory injected with a config provider of an imported module', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        LoomModule.forRootAsync({
          imports: [ConfigModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ store: config.store, concurrency: config.concurrency, ...quiet() }),
        }),
        OrdersModule,
      ],
    }).compile();
    app = await moduleRef.init();
    const loom = app.get(Loom);
    expect((await loom.stats()).concurrency).toBe(3);
    const { id, status } = await enqueueAndWait(loom, SendReceipt, { email: 'cfg@example.com' });
    expect(status).toBe('completed');
    expect((await app.get(AppConfig).store.getJob(id))?.status).toBe('completed');
  });
});
