import { inject } from 'inversify';
import { z } from 'zod';
import { Job, type JobContext } from '@loom/core';
import { Mailer } from './mailer.js';

const Welcome = z.object({ userId: z.string(), email: z.email() });

@Job({ payload: Welcome, retries: 5, backoff: { type: 'exponential', delay: '10s' }, idempotencyKey: (p) => `welcome:${p.userId}` })
export class SendWelcome {
  constructor(@inject(Mailer) private readonly mailer: Mailer) {}

  async run(user: z.infer<typeof Welcome>, ctx: JobContext): Promise<void> {
    await this.mailer.send(user.email, 'Welcome aboard!', { idempotencyKey: ctx.idempotencyKey! });
  }
}
