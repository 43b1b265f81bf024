import { BadRequestException, Body, Controller, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { Loom, LoomError, type EnqueueResult } from '@loom/core';
import { InjectLoom } from '@loom/nestjs';
import { Mailer, type SentMail } from './mailer.service.js';
import { SendWelcome, type Signup } from './send-welcome.job.js';

@Controller()
export class SignupsController {
  constructor(
    @InjectLoom() private readonly loom: Loom,
    private readonly mailer: Mailer,
  ) {}

  /** Enqueues the welcome mail; the same email again returns the same job (`deduplicated: true`). */
  @Post('signups')
  @HttpCode(202)
  async signUp(@Body() signup: Signup): Promise<EnqueueResult> {
    try {
      return await this.loom.enqueue(SendWelcome, signup);
    } catch (err) {
      if (LoomError.is(err, 'INVALID_PAYLOAD')) throw new BadRequestException(err.message);
      throw err;
    }
  }

  @Get('jobs/:id')
  async job(@Param('id') id: string) {
    const job = await this.loom.getJob(id);
    if (!job) throw new NotFoundException(`Job ${id} not found`);
    const { lease: _lease, ...visible } = job;
    return visible;
  }

  @Get('mail')
  sentMail(): SentMail[] {
    return this.mailer.sent;
  }
}
