import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Job, Loom, MemoryStore, type JobContext } from '@loom/core';
import { InjectLoom, LoomModule } from '@loom/nestjs';
import { createTestLoom, FakeClock, type TestLoom } from '@loom/testing';

/** A mail provider that refuses the first `failures` sends. */
@Injectable()
class Mailer {
  failures = 0;
  readonly sent: string[] = [];
  async send(to: string): Promise<void> {
    if (this.failures-- > 0) throw new Error('mail provider unavailable');
    this.sent.push(to);
  }
}

@Injectable()
@Job({ name: 'send-receipt', retries: 3, backoff: { type: 'fixed', delay: '1m' } })
class SendReceipt {
  constructor(private readonly mailer: Mailer) {}
  async run(payload: { email: string }): Promise<void> {
    await this.mailer.send(payload.email);
  }
}

@Injectable()
@Job({ name: 'place-order' })
class PlaceOrder {
  constructor(@InjectLoom() private readonly loom: Loom) {}
  async run(payload: { email: string }, ctx: JobContext): Promise<void> {
    await this.loom.enqueue(SendReceipt, payload, { idempotencyKey: `receipt:${ctx.jobId}`, delay: '10m' });
  }
}

@Injectable()
class OrdersService {
  constructor(@InjectLoom() private readonly loom: Loom) {}
  async place(email: string): Promise<string> {
    return (await this.loom.enqueue(PlaceOrder, { email })).id;
  }
}

@Module({ providers: [Mailer, SendReceipt, PlaceOrder, OrdersService] })
class OrdersModule {}

describe('createTestLoom with Nest', () => {
  it('runs a job built by a Nest testing module, retrying on the FakeClock', async () => {
    const moduleRef = await Test.createTestingModule({ providers: [Mailer, SendReceipt] }).compile();
    const t = await createTestLoom({ jobs: [SendReceipt], resolve: (jobClass) => moduleRef.get(jobClass) });
    const mailer = moduleRef.get(Mailer);
    mailer.failures = 1;
    const { id } = await t.enqueue(SendReceipt, { email: 'ada@example.com' });
    await t.runUntilIdle();
    expect((await t.getJob(id))?.status).toBe('queued');
    expect(mailer.sent).toEqual([]);
    await t.advance('1m');
    expect((await t.getJob(id))?.status).toBe('completed');
    expect(mailer.sent).toEqual(['ada@example.com']);
    await t.stop();
    await moduleRef.close();
  });

  it("drives the app's own engine (LoomModule with createLoom: createTestLoom) from a Nest testing module", async () => {
    const clock = new FakeClock();
    let t: TestLoom | undefined;
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
    const app = await moduleRef.init();
    expect(app.get(Loom)).toBe(t!.loom);
    const orderJob = await app.get(OrdersService).place('grace@example.com');
    await t!.runUntilIdle();
    expect((await t!.getJob(orderJob))?.status).toBe('completed');
    const mailer = app.get(Mailer);
    expect(mailer.sent).toEqual([]); // the receipt waits for its 10 minute delay
    await t!.advance('10m');
    expect(mailer.sent).toEqual(['grace@example.com']);
    await t!.stop();
    await app.close();
  });
});
