import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { Job } from '@loom/core';
import { Mailer } from './mailer.service.js';

export const Signup = z.object({ email: z.email() });
export type Signup = z.infer<typeof Signup>;

@Injectable()
@Job({
  name: 'send-welcome',
  queue: 'emails',
  payload: Signup,
  retries: 2,
  backoff: { type: 'fixed', delay: '1s' },
  idempotencyKey: (s) => `welcome:${s.email}`,
})
export class SendWelcome {
  constructor(private readonly mailer: Mailer) {}

  async run(signup: Signup): Promise<void> {
    await this.mailer.send(signup.email, 'Welcome aboard!');
  }
}
