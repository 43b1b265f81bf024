import { NestFactory } from '@nestjs/core';

/** The reader's mail service, a Nest provider. */
@Injectable()
export class Mailer {
  async send(_to: string, _options: { idempotencyKey?: string }): Promise<void> {}
}

import { Injectable, Module } from '@nestjs/common';
import { Job, Loom, type JobContext } from '@loom/core';
import { MongoStore } from '@loom/mongo-store';
import { InjectLoom, LoomModule } from '@loom/nestjs';

@Injectable()
@Job({ queue: 'emails', retries: 5 })
export class SendReceipt {
  constructor(private readonly mailer: Mailer) {} // any Nest provider
  async run(payload: { email: string }, ctx: JobContext) {
    await this.mailer.send(payload.email, { idempotencyKey: ctx.idempotencyKey });
  }
}

@Injectable()
export class OrdersService {
  constructor(@InjectLoom() private readonly loom: Loom) {}
  place(email: string) {
    return this.loom.enqueue(SendReceipt, { email });
  }
}

@Module({
  imports: [LoomModule.forRoot({ store: new MongoStore({ url: process.env.MONGODB_URI!, database: 'app' }), concurrency: 20 })],
  providers: [SendReceipt, Mailer, OrdersService],
})
export class AppModule {}

// main.ts
const app = await NestFactory.create(AppModule);
app.enableShutdownHooks(); // SIGTERM / SIGINT close the app, which stops the engine gracefully
await app.listen(3000);
